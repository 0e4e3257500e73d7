"""Run the docstring examples of every core module (they are part of the docs)."""
import doctest
import importlib
import importlib.util

import pytest

import pkgutil

import meshtensor

# every module of the core layer (the kernel layer's and meshtensor.dist's doctests run
# in their own test folders; the command line's in tests/test_cli.py)
MODULES = ["meshtensor"] + sorted(
    m.name for m in pkgutil.walk_packages(meshtensor.__path__, "meshtensor.")
    if not m.name.startswith(("meshtensor.tilelang", "meshtensor.dist", "meshtensor.cli",
                              "meshtensor.profile_cli", "meshtensor.calibrate_cli",
                              "meshtensor.__main__")))


HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    """Every example runs; on a core-only install (NumPy, no torch) the examples that
    show torch objects (DTensor placements) are left out, the rest still run."""
    mod = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(mod, name):
        if not HAVE_TORCH and ("placements" in test.name
                               or any("torch" in ex.source for ex in test.examples)):
            continue
        runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.failed == 0
    assert res.attempted > 0 or name == "meshtensor"


def test_import_is_light():
    import subprocess
    import sys
    # meshtensor.interop comes with the package (as collectives) and stays light too.
    code = ("import sys, meshtensor; meshtensor.interop.to_seed; bad = [m for m in "
            "('tilelang', 'tvm', 'torch', 'jax') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
