"""The examples compile on CPU (target "c") and match NumPy."""
import importlib.util
import pathlib

import pytest

pytest.importorskip("tilelang")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("shape,block", [((64, 48), (8, 4)), ((30, 20), (4, 5))])
def test_blocked_copy(shape, block):
    assert load("blocked_copy").run(*shape, block=block) == 0


@pytest.mark.slow
@pytest.mark.parametrize("dims", [(8, 64, 32, 48), (6, 30, 20, 12)])
def test_batched_gemm(dims):
    assert load("batched_gemm").run(*dims) < 1e-3
