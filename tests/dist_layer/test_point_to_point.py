"""The collectives meshtensor.dist runs as batched isend/irecv rounds (decision 36):
which ones, and their results equal the simulator's bit for bit."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meshtensor import Mesh, MeshArray  # noqa: E402
from meshtensor import collectives as C  # noqa: E402
from meshtensor.dist import run, runs_point_to_point  # noqa: E402

import p2p_workers as P  # noqa: E402


@pytest.mark.parametrize("op, k, reduction, dtype, want", [
    ("all_gather", 2, None, torch.float32, True),
    ("all_gather", 6, None, torch.int16, True),
    ("all_gather", 1, None, torch.float32, False),
    ("reduce_scatter", 2, "sum", torch.float32, True),
    ("reduce_scatter", 2, "prod", torch.int64, True),
    ("reduce_scatter", 2, "max", torch.float32, False),
    ("reduce_scatter", 3, "sum", torch.float32, False),
    ("reduce_scatter", 2, "sum", torch.float16, False),
    ("all_reduce", 2, "sum", torch.float32, False),
], ids=["gather-2", "gather-6-int16", "gather-1", "rs-sum-f32", "rs-prod-i64", "rs-max",
        "rs-3-members", "rs-f16", "all-reduce"])
def test_which_ops_run_point_to_point(op, k, reduction, dtype, want):
    assert runs_point_to_point(op, k, reduction, dtype) is want


@pytest.mark.slow
def test_point_to_point_collectives_equal_the_simulator():
    m = Mesh((2, 2))
    got = run(P.point_to_point, (2, 2), timeout=60)
    for (shape, ax, dt, what), _ in got[0].items():
        if what.startswith("gather"):
            a = MeshArray.from_locals(m, [P.blocks(shape, dt, r) for r in range(m.size)])
            sim = C.all_gather(a, [0] if what == "gather" else [1, 0], ax)
        else:
            a = MeshArray.from_locals(m, [P.terms(shape, dt, r) for r in range(m.size)])
            sim = C.reduce_scatter(a, [0], ax, what)
        for r in range(m.size):
            g = got[r][shape, ax, dt, what]
            assert g.dtype == sim.local(r).dtype, (shape, ax, dt, what, r)
            np.testing.assert_array_equal(g, sim.local(r), err_msg=f"{shape} {ax} {dt} {what} {r}")
