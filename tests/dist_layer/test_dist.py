"""meshtensor.dist on gloo, one process per device, against the NumPy simulator."""
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meshtensor import Mesh, MeshArray, Sharding, distribute, reshard  # noqa: E402
from meshtensor import collectives as C  # noqa: E402
from meshtensor.dist import DistRunError, run  # noqa: E402

import workers as W  # noqa: E402


def sim_collectives(m):
    """The same inputs and ops as workers.collectives, on the simulator."""
    out = {}
    x = W.global_tensor((m.shape[0] * 3 + 1, 5), seed=1)
    a = distribute(x, Sharding(m, [[0]]))
    out["all_gather"] = C.all_gather(a, [0], 0)
    out["all_gather_yx"] = C.all_gather(distribute(x, Sharding(m, [[1, 0]])), [1, 0], 0)
    out["all_slice"] = C.all_slice(a, [1], 1)
    out["all_to_all"] = C.all_to_all(a, [0], 1, 0)
    out["all_to_all_yx"] = C.all_to_all(a, [1, 0], 1, 0)
    terms = MeshArray.from_locals(m, [W.global_tensor((4, 3), seed=10 + r) for r in range(m.size)])
    for kind in ("sum", "max", "min", "prod"):
        out[f"all_reduce_{kind}"] = C.all_reduce(terms, [0], kind)
        out[f"reduce_{kind}"] = C.reduce(terms, [1], [m.shape[1] - 1], kind)
        out[f"reduce_scatter_{kind}"] = C.reduce_scatter(terms, [1, 0], 0, kind)
    t8 = MeshArray.from_locals(m, [v.astype(np.int8) for v in terms.locals])
    out["all_reduce_wide"] = C.all_reduce(t8, [0, 1], "sum", dtype=np.int32)
    out["broadcast"] = C.broadcast(terms, [0], [1])
    out["gather"] = C.gather(a, [0], 0, [1])
    out["scatter"] = C.scatter(MeshArray.from_locals(m, [W.global_tensor((7, 2), seed=r)
                                                         for r in range(m.size)]), [1], 0, [0])
    out["permute"] = C.permute(terms, [(0, m.size - 1), (m.size - 1, 0), (1, 2)])
    out["shift"] = C.shift(terms, [1], 1, 1, rotate=True)
    out["shift_plain"] = C.shift(terms, [0, 1], 0, -1)
    h = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 2, 0])
    good = distribute(W.global_tensor((7, 9), seed=3), h)
    stale = [np.array(v) for v in good.locals]
    for v in stale:
        v[0] = -99
    out["update_halo"] = C.update_halo(MeshArray.from_locals(m, stale, sharding=h), h)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mesh_shape", [(2, 2), (2, 3)], ids=["2x2", "2x3"])
def test_every_collective_and_reshard_matches_simulator(mesh_shape):
    m = Mesh(mesh_shape)
    got = run(_all, mesh_shape, timeout=60)
    want = sim_collectives(m)
    for r in range(m.size):
        for name, sim in want.items():
            g = got[r]["collectives"][name]
            assert g.dtype == sim.local(r).dtype, name
            np.testing.assert_array_equal(g, sim.local(r), err_msg=f"{name} rank {r}")
        for i, (shape, a, b, ka, kb) in enumerate(W.RESHARD_CASES):
            x = W.global_tensor(shape, seed=i)
            sim = reshard(distribute(x, Sharding(m, a, **ka)), Sharding(m, b, **kb))
            np.testing.assert_array_equal(got[r]["reshards"][i], sim.local(r),
                                          err_msg=f"reshard case {i} rank {r}")


def _all(dm):
    return {"collectives": W.collectives(dm), "reshards": W.reshards(dm)}


@pytest.mark.slow
def test_a_rank_dying_mid_plan_fails_cleanly():
    import multiprocessing
    t0 = time.monotonic()
    with pytest.raises(DistRunError) as e:
        run(W.dies_mid_plan, (2, 2), timeout=10)
    elapsed = time.monotonic() - t0
    msg = str(e.value)
    assert "rank 1 (0, 1) died: exited with code 3 without a result" in msg
    others = [e.value.outcomes[r] for r in (0, 2, 3)]
    # A rank whose part of the plan needs nothing from rank 1 may finish; the others
    # fail with the clear collective error.
    assert all(o == "finished" or o.startswith("error: DistCollectiveError") for o in others), others
    assert any("DistCollectiveError" in o and "a peer process may have died" in o for o in others)
    assert elapsed < 60 + 10 + 30  # start-up, the timeout, and the grace period
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.slow
def test_a_rank_raising_is_reported():
    with pytest.raises(DistRunError, match=r"rank 0 \(0, 0\) error: ValueError: boom on purpose"):
        run(W.raises_on_rank_0, (2, 2), timeout=10)
