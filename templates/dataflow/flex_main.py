"""Flex Template entry point (FLEX_TEMPLATE_PYTHON_PY_FILE of the images built by the Dockerfile).

The launcher passes the template parameters as ``--name=value`` flags; ``BEAM_PREP_FLEX_JOB``
(set per image target) says which job they are for. See beam_prep.pipelines.flex_template.
The job's last step moves its output into place and releases the output lock on a worker, so
the launcher may exit once the job is submitted (docs/dataflow.md: How the output is finalised).
"""

import os
import sys

from beam_prep.pipelines.flex_template import launch

if __name__ == "__main__":
    sys.exit(launch(os.environ.get("BEAM_PREP_FLEX_JOB", ""), sys.argv[1:]))
