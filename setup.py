"""Packaging for beam_prep.

The version ranges below are the ones that resolve together on Python 3.11
(checked with pip on this project's machine):

* tfx-bsl 1.21 pins tensorflow-serving-api to 2.19.x, whose protos load fine
  beside TensorFlow 2.21, so the serving API is pinned the same way here.
* beam_prep/io/_tfexample.c is an optional C extension (see NATIVE below).
* tensorflow-transform is *not* a runtime dependency: importing it switches
  ``tf.keras`` to Keras 2 for the whole process. It lives in the ``test`` and
  ``bench`` extras as the reference implementation only.
"""

import re

from setuptools import Extension, find_packages, setup

# One version source: beam_prep/version.py (read as text: importing the package needs its deps).
with open("beam_prep/version.py", encoding="utf-8") as f:
    VERSION = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)

# The tf.Example decoder's C part. optional=True: without a compiler the install still
# succeeds and TFRecord input is decoded by tfx-bsl instead (same results, ~5x slower).
NATIVE = Extension("beam_prep.io._tfexample",
                   ["beam_prep/io/_tfexample.c", "beam_prep/io/_crc32c.c"],
                   depends=["beam_prep/io/_crc32c.h"],
                   extra_compile_args=["-O2"], optional=True)

# The transform job's column hashes (FarmHash Fingerprint64, SipHash) and TFRecord framing.
# Required by `beam-prep transform` (it says so when missing); optional so that an install
# without a compiler still gives the other jobs.
HASHES = Extension("beam_prep.transform._hashes",
                   ["beam_prep/transform/_hashes.c", "beam_prep/io/_crc32c.c"],
                   depends=["beam_prep/io/_crc32c.h"],
                   extra_compile_args=["-O2"], optional=True)

INSTALL_REQUIRES = [
    "apache-beam[gcp]>=2.77,<2.78",
    "tensorflow>=2.21,<2.22",
    "keras>=3.15,<4",
    "tfx-bsl>=1.21,<1.22",
    "tensorflow-serving-api>=2.19,<2.22",
    "pyarrow>=14",
    "numpy>=1.26",
    "pyyaml>=6",
    "jinja2>=3.1",
    "keras-rs>=0.4,<0.5",
    "tensorboard>=2.21,<2.22",
]

TEST_REQUIRES = [
    "tensorflow-transform>=1.21,<1.22",
    "tensorflow-hub>=0.16",
    "pytest>=8",
    "pytest-xdist>=3",
    "ruff>=0.6",
    "hypothesis>=6",  # property-based tests of the TFRecord reader and tf.Example decoder
    "gcp-storage-emulator>=2024.8",  # real GCS JSON API for tests/io/commit/test_output_gcs.py
    "import-linter>=2.1",
    "jsonschema>=4",
]

# The ranking launcher on KERAS_BACKEND=jax (docs/training.md); the default install is TF only.
# jax 0.10.2 (CPU wheels from PyPI) is the version tested here; on TPU hosts install
# jax[tpu] of the same version instead.
JAX_REQUIRES = [
    "jax>=0.10,<0.11",
    "jaxlib>=0.10,<0.11",
]

setup(
    name="beam-prep",
    version=VERSION,
    description=(
        "Preprocessing state for Keras 3 models computed at scale with Apache Beam, "
        "plus ELWC ranking datasets and a TPU-ready ranking launcher."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.14",
    # The repository folders pipelines/ and templates/ are installed inside the package, so the
    # wheel puts nothing at the top level of site-packages but beam_prep.
    packages=find_packages(include=["beam_prep", "beam_prep.*"])
    + ["beam_prep.pipelines", "beam_prep.templates"],
    package_dir={"beam_prep.pipelines": "pipelines", "beam_prep.templates": "templates"},
    package_data={"beam_prep": ["py.typed"], "beam_prep.templates": ["*.j2"]},
    include_package_data=True,
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES,
                    "bench": TEST_REQUIRES + ["psutil", "lightgbm>=4.0"],
                    "jax": JAX_REQUIRES},
    entry_points={"console_scripts": ["beam-prep=beam_prep.cli:run"]},
    ext_modules=[NATIVE, HASHES],
)
