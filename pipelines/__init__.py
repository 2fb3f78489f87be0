"""Runnable Beam jobs, installed as ``beam_prep.pipelines``: each module has ``run(argv=None)``.

This repository folder is the ``beam_prep.pipelines`` package (``package_dir`` in setup.py), so
the wheel installs nothing at the top level but ``beam_prep``. Importing it as plain ``pipelines``
(possible only from a source checkout) still works for one release, with a DeprecationWarning.
"""

if __name__ == "pipelines":  # pragma: no cover - exercised only from a checkout
    import warnings

    warnings.warn("`pipelines` is installed as `beam_prep.pipelines`; the top-level import path is "
                  "deprecated and will be removed in beam_prep 0.3. Import `beam_prep.pipelines`.",
                  DeprecationWarning, stacklevel=2)
