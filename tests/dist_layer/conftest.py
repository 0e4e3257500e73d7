"""Jobs shared by the tests of this folder: each spawned job runs once per test run,
also when pytest-xdist spreads its tests over several workers."""
import os
import pathlib
import pickle

import pytest


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory):
    """``once_per_run(key, compute)``: ``compute()``'s result, computed once per test run.

    Under pytest-xdist every worker has its own module-scoped fixtures, so a job that
    several tests read would be spawned by each worker that runs one of them. The first
    worker computes it and leaves it in the run's shared temporary folder, under a file
    lock that the others wait on (pytest-xdist's documented recipe for session data).
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    try:
        import fcntl
    except ImportError:  # no POSIX file locks: each worker computes its own
        fcntl = None
    root = tmp_path_factory.getbasetemp().parent  # the run's folder, shared by workers

    def get(key, compute):
        if worker is None or fcntl is None:
            return compute()
        with open(root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = root / f"{key}.pickle"
            if path.exists():
                return pickle.loads(path.read_bytes())
            value = compute()
            path.write_bytes(pickle.dumps(value))
            return value
    return get


HERE = pathlib.Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """This folder's tests that spawn process groups (marked slow) share one
    pytest-xdist worker (``--dist loadgroup``, with the docs' examples that spawn): they
    wait for each other anyway (``one_job_at_a_time``), and a worker waiting on the
    lock does nothing while the other could run the rest of the suite."""
    for item in items:
        if item.path.is_relative_to(HERE) and item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.xdist_group("spawns"))


@pytest.fixture(autouse=True)
def one_job_at_a_time(request, spawn_lock):
    """Tests that spawn process groups (marked slow) run one at a time across workers."""
    if request.node.get_closest_marker("slow") is None:
        yield
        return
    with spawn_lock():
        yield
