"""The Dataflow deployment kit (templates/dataflow/) and Dataflow translation of both jobs.

Docker cannot run here, so this checks what can be checked without it: the Flex Template metadata
validates against the documented metadata schema and matches the command line exactly, the
launcher's ``--flag=true`` form reaches the jobs correctly, both jobs translate for Dataflow
offline (``--dry_run``) with sdist staging (``--setup_file``) and with a custom container image,
and the image's install step works in a fresh virtualenv (slow test).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from beam_prep.pipelines import flex_template
from beam_prep.pipelines.job_parser import is_switch

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "templates" / "dataflow"
LETOR = REPO / "examples" / "data" / "letor" / "lightgbm" / "rank.test"

# The template metadata as documented for Dataflow Flex Templates (TemplateMetadata and
# ParameterMetadata of the Dataflow v1b3 API): name required, parameters each with a name, label
# and help text; isOptional a boolean; regexes a list of strings.
METADATA_SCHEMA = {
    "type": "object",
    "required": ["name", "parameters"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "streaming": {"type": "boolean"},
        "parameters": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "label", "helpText"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-zA-Z][a-zA-Z0-9_]*$"},
                    "label": {"type": "string", "minLength": 1},
                    "helpText": {"type": "string", "minLength": 1},
                    "isOptional": {"type": "boolean"},
                    "regexes": {"type": "array", "items": {"type": "string"}},
                    "paramType": {"type": "string"},
                },
            },
        },
    },
}


def _committed(job: str) -> dict:
    return json.loads((KIT / f"{job}.metadata.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("job", sorted(flex_template.JOBS))
def test_metadata_is_valid_and_up_to_date(job):
    meta = _committed(job)
    jsonschema.validate(meta, METADATA_SCHEMA)
    for param in meta["parameters"]:
        for regex in param.get("regexes", []):
            re.compile(regex)
    assert meta == flex_template.metadata(job), (
        f"templates/dataflow/{job}.metadata.json is stale: regenerate it with "
        f"python -m beam_prep.pipelines.flex_template {job} "
        f"> templates/dataflow/{job}.metadata.json")


def test_schema_rejects_a_parameter_without_help():
    bad = {"name": "t", "parameters": [{"name": "x", "label": "X"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, METADATA_SCHEMA)


@pytest.mark.parametrize("job", sorted(flex_template.JOBS))
def test_every_parameter_is_a_flag_of_the_job(job):
    parser = flex_template.parser(job)
    known = {a.dest for a in parser.flags}
    names = [p["name"] for p in _committed(job)["parameters"]]
    assert len(names) == len(set(names))
    assert set(names) <= known
    required = {a.dest for a in parser.flags if a.required}
    assert {p["name"] for p in _committed(job)["parameters"] if not p["isOptional"]} == required


@pytest.mark.parametrize("job", sorted(flex_template.JOBS))
def test_job_parser_lists_what_argparse_holds(job):
    """Pins JobParser.flags and is_switch against argparse's own (private) records."""
    parser = flex_template.parser(job)
    internal = [a for a in parser._actions if a.option_strings]
    assert parser.flags == internal
    assert ([a.dest for a in internal if isinstance(a, argparse._StoreTrueAction)]
            == [a.dest for a in parser.flags if is_switch(a)])
    assert {"overwrite", "force_unlock", "quiet"} <= {a.dest for a in parser.flags
                                                       if is_switch(a)}


def test_launcher_switches_become_argparse_flags():
    argv = ["--spec=s.yaml", "--input=gs://b/*.csv", "--output=gs://b/o", "--overwrite=true",
            "--runner=DataflowRunner"]
    assert flex_template.flex_argv("analyze", argv) == [
        "--spec=s.yaml", "--input=gs://b/*.csv", "--output=gs://b/o", "--overwrite",
        "--runner=DataflowRunner"]
    assert "--overwrite" not in flex_template.flex_argv("analyze", ["--overwrite=false"])
    with pytest.raises(SystemExit, match="true or false"):
        flex_template.flex_argv("analyze", ["--overwrite=yes"])


def test_numeric_regexes_accept_what_argparse_accepts():
    params = {p["name"]: p for p in _committed("analyze")["parameters"]}
    ints = params["batch_size"]["regexes"][0]
    floats = params["max_bad_fraction"]["regexes"][0]
    assert re.match(ints, "65536") and not re.match(ints, "1.5")
    for ok in ("0.01", "1", "1e-3", ".5"):
        assert re.match(floats, ok), ok
    assert not re.match(floats, "one")


DATAFLOW = ["--runner=DataflowRunner", "--project=fake-project", "--region=us-central1",
            "--temp_location=gs://fake-bucket/tmp", "--dry_run=True"]


_MANY = """
import json, sys
from beam_prep.cli import main
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    print(f"\\n== EXIT {code}", flush=True)
"""


def _run_in_one_process(commands: list[list[str]], cwd: Path) -> list[str]:
    """Runs ``beam-prep`` commands one after the other in one interpreter (one Beam start-up);
    returns each command's stdout, after asserting that each exited 0."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", _MANY, json.dumps(commands)], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    parts = out.stdout.split("\n== EXIT ")
    codes = [part.split("\n", 1)[0].strip() for part in parts[1:]]
    assert codes == ["0"] * len(commands), out.stderr[-3000:]
    return parts[:-1]


@pytest.mark.parametrize("images", [
    None,  # sdist staging (--setup_file)
    pytest.param("beam-prep-{}:0.2.0", marks=pytest.mark.slow),  # default suite time
])
def test_analyze_and_make_elwc_translate_for_dataflow(tmp_path, images):
    def staging(command: str) -> list[str]:
        if images is None:
            return ["--setup_file", str(REPO / "setup.py")]
        return [f"--sdk_container_image=us-docker.pkg.dev/p/r/{images.format(command)}",
                "--sdk_location=container"]

    (tmp_path / "spec.yaml").write_text(
        "features:\n  - {name: country, kind: string}\n  - {name: price, kind: numeric, "
        "num_buckets: 4}\n")
    (tmp_path / "d.csv").write_text("country,price\nUS,1.5\nFR,2.5\n")
    analyze, make_elwc = _run_in_one_process([
        ["analyze", "--spec", "spec.yaml", "--input", "d.csv", "--output", "out",
         *DATAFLOW, *staging("analyze")],
        ["make-elwc", "--input", str(LETOR), "--input_format", "lightgbm", "--output", "elwc",
         *DATAFLOW, *staging("make-elwc")]], tmp_path)
    assert "dry run" in analyze and "dry run" in make_elwc
    assert not (tmp_path / "out" / "manifest.json").exists()
    assert not (tmp_path / "elwc" / "stats.json").exists()


@pytest.mark.slow
def test_image_install_step_in_a_fresh_venv(tmp_path):
    """templates/dataflow/install.sh (the Dockerfile's RUN step) in a new virtualenv."""
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                    str(tmp_path / "dist"), str(REPO)], check=True, timeout=900)
    wheel = next((tmp_path / "dist").glob("beam_prep-*.whl"))
    python = str(tmp_path / "venv" / "bin" / "python")
    out = subprocess.run(["bash", str(KIT / "install.sh"), python, str(wheel)],
                         capture_output=True, text=True, timeout=3000)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert "installed" in out.stdout


def test_flex_entry_point_runs_the_job_and_reports_errors(tmp_path, capsys):
    assert flex_template.launch("nope", []) == 2
    assert "BEAM_PREP_FLEX_JOB" in capsys.readouterr().err
    code = flex_template.launch("analyze", [f"--spec={tmp_path / 'missing.yaml'}",
                                            f"--input={tmp_path / 'd.csv'}",
                                            f"--output={tmp_path / 'out'}", "--overwrite=false"])
    assert code == 1
    err = capsys.readouterr().err  # the first problem found (the spec is read first), one line
    assert "missing.yaml" in err and err.count("\n") == 1, err
