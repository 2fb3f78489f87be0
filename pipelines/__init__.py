"""Runnable Beam jobs: each module has ``run(argv=None) -> PipelineResult``."""
