"""Flags: a flag neither the job nor Beam knows stops the job with exit code 2 and a suggestion."""

from __future__ import annotations

import argparse

import pytest
from beam_prep.pipelines.flags import (
    DEFAULT_LOCAL_RUNNER,
    beam_unknown_args,
    job_pipeline_options,
    parse_job_args,
)

from beam_prep import cli


def _exit_code_and_stderr(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    return exc.value.code, capsys.readouterr().err


def test_analyze_rejects_a_misspelt_flag_and_suggests_the_right_one(capsys, tmp_path):
    code, err = _exit_code_and_stderr(capsys, [
        "analyze", "--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "x.csv"),
        "--output", str(tmp_path / "o"), "--max_bad_fracton=0.5"])
    assert code == 2
    assert "unrecognized argument --max_bad_fracton=0.5 (did you mean --max_bad_fraction?)" in err
    assert not (tmp_path / "o").exists()


def test_make_elwc_rejects_unknown_flags_and_names_all_of_them(capsys, tmp_path):
    code, err = _exit_code_and_stderr(capsys, [
        "make-elwc", "--input", str(tmp_path / "x.txt"), "--output", str(tmp_path / "o"),
        "--runer", "DirectRunner", "--direct_num_workers=2", "--num_shardz=3"])
    assert code == 2
    # "DirectRunner" is the value of the unknown --runer, not a second problem.
    assert ("unrecognized arguments --runer (did you mean --runner?), --num_shardz=3 "
            "(did you mean --num_shards?)." in err)
    assert "--direct_num_workers" not in err


def test_beam_options_pass_through_and_only_unknown_ones_are_reported():
    unknown, names = beam_unknown_args([
        "--runner=DirectRunner", "--direct_running_mode", "multi_processing",
        "--experiments", "a", "--experiments=b", "--no_use_public_ips", "--bogus=1", "x"])
    assert unknown == ["--bogus=1", "x"]
    assert {"--runner", "--direct_num_workers", "--temp_location", "--project"} <= set(names)


def test_parse_job_args_returns_the_beam_flags_unchanged():
    p = argparse.ArgumentParser(prog="job")
    p.add_argument("--max_bad_fraction", type=float, default=0.01)
    args, beam_args = parse_job_args(p, ["--max_bad_fraction=0.5", "--runner", "DirectRunner",
                                         "--temp_location=/tmp/t"])
    assert args.max_bad_fraction == 0.5
    assert beam_args == ["--runner", "DirectRunner", "--temp_location=/tmp/t"]


def test_a_flag_far_from_every_known_one_gets_no_suggestion(capsys):
    p = argparse.ArgumentParser(prog="job")
    with pytest.raises(SystemExit) as exc:
        parse_job_args(p, ["--zzqqxx=1"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "unrecognized argument --zzqqxx=1." in err
    assert "did you mean" not in err


@pytest.mark.parametrize("job,argv,flag", [
    ("analyze", ["--spec", "s.yaml", "--input", "data/*.csv", "--output", "/abs/out"], "--input"),
    ("transform", ["--artifacts", "/abs/art", "--input", "/abs/x.csv", "--output", "enc"],
     "--output"),
    ("make_elwc", ["--input", "/abs/q.txt", "--output", "/abs/o", "--artifacts", "art"],
     "--artifacts"),
])
def test_relative_local_paths_are_refused_on_a_runner_with_remote_workers(job, argv, flag):
    """Flink/Spark SDK workers have their own working directory: refused before any work."""
    import importlib

    from beam_prep.errors import InputError

    module = importlib.import_module(f"beam_prep.pipelines.{job}")
    with pytest.raises(InputError, match=rf"^{flag} must be an absolute path or a filesystem "
                                         r"URL on --runner=FlinkRunner.*Received: "):
        module.run([*argv, "--runner=FlinkRunner", "--flink_master=[local]"])


def test_relative_paths_stay_fine_on_local_runners_and_urls_everywhere():
    from beam_prep.pipelines.flags import require_shared_paths

    require_shared_paths([], {"--input": ["data/*.csv"], "--output": "out"})
    require_shared_paths(["--runner=DirectRunner"], {"--output": "out"})
    require_shared_paths(["--runner=DataflowRunner", "--dry_run=True"], {"--input": ["d.csv"]})
    require_shared_paths(["--runner=SparkRunner"], {"--input": ["gs://b/x.csv", "/abs/y.csv"],
                                                    "--cache_dir": None})


@pytest.mark.parametrize("runner, millis", [
    ("FlinkRunner", 5000), ("apache_beam.runners.portability.flink_runner.FlinkRunner", 5000),
    ("SparkRunner", 600000)])
def test_flink_and_spark_get_an_environment_cache_unless_one_is_given(runner, millis):
    # docs/runners.md "Faults": Flink's is shorter than the restart delay of runners/flink-conf/
    options = job_pipeline_options([f"--runner={runner}", "--environment_type=EXTERNAL"])
    assert int(options.get_all_options()["environment_cache_millis"]) == millis
    for given, value in ((["--environment_cache_millis=0"], 0),
                         (["--environment_cache_millis", "600000"], 600000)):
        options = job_pipeline_options([f"--runner={runner}", *given])
        assert int(options.get_all_options()["environment_cache_millis"]) == value


@pytest.mark.parametrize("argv", [[], ["--runner=DirectRunner"], ["--runner=DataflowRunner"],
                                  ["--runner=PortableRunner"]])
def test_other_runners_keep_beams_environment_cache_default(argv):
    options = job_pipeline_options(argv).get_all_options()
    assert options["environment_cache_millis"] == 0
    assert options["runner"] == (argv[0].split("=")[1] if argv else DEFAULT_LOCAL_RUNNER)
