"""The random multi-rank T.dist program generator (tools/fuzz_tdist.py): a fixed-seed
slice runs equal to its NumPy model, and every kind of planted defect is refused for
its own reason."""

import pytest

from tdist_fuzz.program import PLANTS, generate
from tdist_fuzz.runner import EXPECTED, run_many, run_one, summary

pytestmark = pytest.mark.slow


def test_generation_is_a_function_of_seed_and_index():
    a, b = generate("s", 3), generate("s", 3)
    assert a.source() == b.source() and a.plant == b.plant
    assert generate("s", 4).source() != a.source()
    assert set(EXPECTED) == set(PLANTS)
    with pytest.raises(ValueError, match="plant must be one of"):
        generate("s", 0, plant="nothing")


def test_fixed_seed_slice_runs_equal_to_the_model_or_is_caught():
    outcomes = run_many("slice-2026", list(range(16)), workers=0)
    bad = [o for o in outcomes if o.status not in ("equal", "caught")]
    assert not bad, summary(outcomes) + "\n" + "\n".join(
        f"{o.index} {o.status}: {o.message[:300]}" for o in bad)
    assert sum(o.status == "equal" for o in outcomes) >= 8


@pytest.mark.parametrize("plant", PLANTS)
def test_every_planted_defect_is_refused(plant):
    o = run_one("plants", PLANTS.index(plant), plant=plant)
    assert o.status == "caught", f"{o.status}: {o.message[:500]}"
