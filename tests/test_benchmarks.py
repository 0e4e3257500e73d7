"""Every benchmark runs: ``python benchmarks/<name>.py --quick`` for each file of
``benchmarks/`` (a new benchmark is picked up, and must have ``--quick``), so a broken
benchmark fails the suite (issue 30: ``bench_reshard.py`` stopped at its pod-scale
part and no test ran the benchmarks). Nothing here is timed: ``--quick`` numbers are
not measurements."""
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
#: Fast enough (well under a second) to run in the default selection unmarked.
FAST = {"bench_core.py"}
#: Starts process groups: queued with the other tests that do (tests/conftest.py).
SPAWNS = {"bench_dist.py"}


def _params() -> list:
    out = []
    for name in SCRIPTS:
        marks = [] if name in FAST else [pytest.mark.slow]
        if name in SPAWNS:
            marks.append(pytest.mark.xdist_group("spawns"))
        out.append(pytest.param(name, marks=marks, id=name[:-3]))
    return out


@pytest.mark.parametrize("name", _params())
def test_benchmark_runs_quick(name, spawn_lock):
    text = (BENCH / name).read_text()
    assert "--quick" in text, f"{name} has no --quick mode"
    needs = set(re.findall(r"^(?:import|from) (torch|tilelang)\b", text, re.M))
    missing = [m for m in sorted(needs) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}")
    with spawn_lock() if name in SPAWNS else _nothing():
        r = subprocess.run([sys.executable, str(BENCH / name), "--quick"],
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{name} --quick failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip(), f"{name} --quick printed nothing"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
