"""What the corpus of SUNMMIO's kernels needed of the layer, one rule each: the fork's
modules import unchanged, a launch grid with fewer blocks than cores (idle cores, and
the comm ops they cannot join), replicated outputs of such a launch, a kernel with no
T.Kernel, fragments as T.clear targets, T.gemm operands read before the accumulator is
written and multiplied in its dtype, and float16 infinities in a vectorised fill."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel, prepare_tilelang_mesh  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402

FLAGS = ["-O1"]


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(4, 4))
    yield
    tm.enable(mesh=(4, 4))


def _ints(rng, shape, lo=-3, hi=4):
    return rng.integers(lo, hi, shape).astype(np.float32)


def test_the_forks_modules_import_unchanged():
    """A kernel file's `from tilelang.language.mesh_tensor import ...` and
    `from tilelang.layout.sunmmio_layouts import ...` lines work after tm.enable."""
    from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
    from tilelang.layout.sunmmio_layouts import make_row_major, make_zz_layout
    assert MeshShardingPolicy is T.MeshShardingPolicy
    assert MeshReplicationType.ALL is T.MeshReplicationType.ALL
    assert str(make_row_major((4, 8))) == "row_major(shape=(4, 8))"
    assert make_zz_layout((64, 64)).kind == "zz"
