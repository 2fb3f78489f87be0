"""Fixtures of the runner tests (``make test-runners``): engines started once per session.

Every test here is marked ``runners`` (excluded from ``make test``, which needs no Java) and
skipped with the reason when Java, the job-server jars (``make runner-jars``) or mount
namespaces are missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runners import data, engines


def pytest_collection_modifyitems(items):
    reason = None
    checked = False
    for item in items:
        if "tests/runners/" not in str(item.fspath).replace("\\", "/"):
            continue
        if not checked:
            reason, checked = engines.missing(), True
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def pool():
    with engines.worker_pool(engines.shared_dir("pool-")) as p:
        yield p


@pytest.fixture(scope="session")
def flink(pool):
    with engines.flink_job_server(engines.shared_dir("flink-")) as server:
        yield server


@pytest.fixture  # one test uses it: the cluster stops after it (one cluster at a time)
def flink_cluster():
    with engines.flink_cluster(engines.shared_dir("flink-cluster-")) as cluster:
        yield cluster


@pytest.fixture
def flink_remote(pool, flink_cluster):
    """A Flink job server submitting to the standalone cluster."""
    with engines.flink_job_server(engines.shared_dir("flink-js-"),
                                  master=flink_cluster.master) as server:
        yield server


@pytest.fixture(scope="session")
def spark_cluster():
    with engines.spark_cluster(engines.shared_dir("spark-")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark(pool, spark_cluster):
    with engines.spark_job_server(engines.shared_dir("spark-js-"), spark_cluster.url) as server:
        yield server


@pytest.fixture(scope="session")
def inputs() -> dict[str, Path]:
    """The event CSVs, the spec and a LETOR file, on the shared storage."""
    root = engines.shared_dir("inputs-")
    data.write_events(root / "events")
    data.write_letor(root / "letor" / "queries.txt")
    return {"root": root, "events": root / "events", "spec": data.write_spec(root / "spec.yaml"),
            "letor": root / "letor" / "queries.txt"}


@pytest.fixture(scope="session")
def engine(request):
    """The job server named by the test's ``engine_name`` parameter."""
    return request.getfixturevalue(request.param)
