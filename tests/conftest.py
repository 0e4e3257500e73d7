import contextlib
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles, loaded by environment variable (registered here, in the first
# file pytest reads, so every test module sees them):
# - "ci": derandomized, so a run on CI draws the same examples every time and a bug
#   found once is found on every run (not on most); loaded when $CI is set (.ci/run
#   sets it);
# - "slow": every property at >= 2000 examples (MESHTENSOR_TEST_PROFILE=slow).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("slow", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])
settings.register_profile("slow-ci", parent=settings.get_profile("slow"), derandomize=True,
                          database=None, print_blob=True)
_slow = os.environ.get("MESHTENSOR_TEST_PROFILE") == "slow"
_ci = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
if _slow or _ci:
    settings.load_profile({(True, True): "slow-ci", (True, False): "slow",
                           (False, True): "ci"}[(_slow, _ci)])


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def spawn_lock(tmp_path_factory):
    """A context manager held by one test at a time across pytest-xdist workers, around
    jobs that start process groups on loopback: run side by side, two jobs' rendezvous
    and gloo pair ports can collide (a free port found by one is taken by the other)
    and a rank fails with "Connection closed by peer"."""
    try:
        import fcntl
    except ImportError:  # no POSIX file locks: run as scheduled
        fcntl = None
    path = tmp_path_factory.getbasetemp().parent / "spawn.lock"

    @contextlib.contextmanager
    def held():
        if fcntl is None or os.environ.get("PYTEST_XDIST_WORKER") is None:
            yield
            return
        with open(path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
    return held


# Error messages are wrapped to 80 columns (``meshtensor.text.fit``): a line break in
# one is layout, not content. ``pytest.raises(..., match=...)`` here matches the
# message as written or with its line breaks (and the indents after them) read as
# single spaces, so a test's pattern names the words, wherever the lines break.
_pytest_raises = pytest.raises


def _flat(message: str) -> str:
    return " ".join(message.split())


class _Raises:
    def __init__(self, expected, match, kw):
        self._cm = _pytest_raises(expected, **kw)
        self._match = match

    def __enter__(self):
        self._info = self._cm.__enter__()
        return self._info

    def __exit__(self, *exc):
        handled = self._cm.__exit__(*exc)
        if handled and self._match is not None:
            import re
            msg = str(self._info.value)
            if not (re.search(self._match, msg) or re.search(self._match, _flat(msg))):
                raise AssertionError(f"Regex pattern did not match.\n  Expected regex: "
                                     f"{self._match!r}\n  Actual message: {msg!r}")
        return handled


def _raises(expected, *args, match=None, **kw):
    if args:  # the call form, pytest.raises(E, func, *args): as pytest has it
        return _pytest_raises(expected, *args, match=match, **kw)
    return _Raises(expected, match, kw)


pytest.raises = _raises
