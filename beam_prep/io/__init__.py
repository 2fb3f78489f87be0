"""Input readers (files → Arrow RecordBatches) and the artifact directory contract."""
