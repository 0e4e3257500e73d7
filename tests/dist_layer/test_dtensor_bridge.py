"""meshtensor.dist.redistribute against DTensor's own redistribute (gloo, CPU)."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meshtensor import Mesh, MeshArray, Sharding, reshard  # noqa: E402
from meshtensor.dist import run  # noqa: E402

import bridge_workers as B  # noqa: E402


def simulated(mesh, shape, src, tgt):
    """Every rank's expected local result, from the NumPy simulator."""
    s = Sharding.from_placements(mesh, list(src), len(shape), shape)
    t = Sharding.from_placements(mesh, list(tgt), len(shape), shape)
    locals_ = [B.source_local(s, shape, r).numpy() for r in range(mesh.size)]
    a = MeshArray.from_locals(mesh, locals_, sharding=s, global_shape=shape)
    return reshard(a, t)


@pytest.fixture(scope="module")
def results(once_per_run):
    """``results(mesh_shape)``: one job per mesh and test run (processes start once):
    every pair, and the error cases."""
    memo = {}

    def get(mesh_shape):
        if mesh_shape not in memo:
            memo[mesh_shape] = once_per_run(f"bridge_{'x'.join(map(str, mesh_shape))}",
                                            lambda: run(B.bridge_all_pairs, mesh_shape,
                                                        timeout=60))
        return memo[mesh_shape]
    return get


@pytest.mark.slow
@pytest.mark.parametrize("mesh_shape", [(2, 2), (2, 3)], ids=["2x2", "2x3"])
def test_every_placement_pair_equals_dtensor(mesh_shape, results):
    mesh = Mesh(mesh_shape)
    got = results(mesh_shape)
    keys = [k for k in got[0] if isinstance(k, tuple)]  # not "errors", "torch_log"
    assert len(keys) == len(B.SHAPES[mesh_shape]) * len(B.pairs(mesh.ndim))
    for shape, src, tgt in keys:
        want = simulated(mesh, shape, src, tgt)
        for r in range(mesh.size):
            ours, theirs = got[r][(shape, src, tgt)]
            where = f"{src} -> {tgt}, shape {shape}, rank {r}"
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
            np.testing.assert_array_equal(ours, want.local(r), err_msg=where)


@pytest.mark.slow
def test_the_bridge_logs_no_torch_warning(results):
    """In particular not gloo's "does not support alltoall yet, falling back" (DTensor's
    own redistribute of these pairs logs it)."""
    for r, got in enumerate(results((2, 2))):
        assert got["torch_log"] == [], (r, got["torch_log"])


BRIDGE_ERRORS = {  # case: (exception type, message pattern)
    "partial target": ("ValueError", r"cannot redistribute \[Shard\(dim=0\), Replicate\(\)\] "
                                     r"into the Partial placements \['R', 'P\(sum\)'\]"),
    "avg source": ("ValueError", r"Partial\('avg'\) on mesh axis 0 has no meshtensor partial kind"),
    "too few placements": ("ValueError", r"1 placements for a mesh with 2 axes"),
    "requires grad": ("ValueError", r"the DTensor requires grad; the bridge does not backpropagate"),
    "not a DTensor": ("TypeError", r"expected a DTensor, got Tensor"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BRIDGE_ERRORS))
def test_bridge_errors(case, results):
    """Each refusal, raised identically on every rank before any communication."""
    for r, got in enumerate(results((2, 2))):
        kind, msg = got["errors"][case]
        assert kind == BRIDGE_ERRORS[case][0], (case, r, kind, msg)
        assert re.search(BRIDGE_ERRORS[case][1], msg), (case, r, msg)


def test_mesh_of_needs_row_major_ranks():
    from meshtensor.dist.dtensor import mesh_of

    class Fake:  # DeviceMesh needs a process group; mesh_of reads two attributes
        mesh = torch.tensor([[0, 2], [1, 3]])
        mesh_dim_names = None
    with pytest.raises(ValueError, match=r"ranks \[\[0, 2\], \[1, 3\]\] are not 0..3 in "
                                         r"row-major order"):
        mesh_of(Fake())
    Fake.mesh = torch.arange(6).reshape(2, 3)
    Fake.mesh_dim_names = ("dp", "tp")
    assert mesh_of(Fake()) == Mesh({"dp": 2, "tp": 3})
