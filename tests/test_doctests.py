"""Run the docstring examples of every core module (they are part of the docs)."""
import doctest
import importlib

import pytest

MODULES = ["meshtensor", "meshtensor.mesh", "meshtensor.sharding", "meshtensor.mesh_array",
           "meshtensor.collectives", "meshtensor.reduction", "meshtensor.cost", "meshtensor.boxes", "meshtensor.visualize",
           "meshtensor.resharding"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
    assert res.attempted > 0 or name == "meshtensor"


def test_import_is_light():
    import subprocess
    import sys
    code = ("import sys, meshtensor; bad = [m for m in ('tilelang', 'tvm', 'torch') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
