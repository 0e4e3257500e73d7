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
