"""Functions run on every rank by the dist tests (module-level: they are pickled)."""
import os
import time

import numpy as np
import torch

from meshtensor import Sharding
from meshtensor.dist import dist_reshard, local_part

RESHARD_CASES = [
    # (global shape, src split_axes, tgt split_axes, src kwargs, tgt kwargs)
    ((6, 6), [[0], [1]], [[1], [0]], {}, {}),
    ((7, 5), [[0], [1]], [[1], [0]], {}, {}),
    ((6, 6), [[0, 1]], [[1, 0]], {}, {}),
    ((5, 4), [[0]], [[], [0]], {}, {}),
    ((6, 4), [[0], [1]], [], {}, {}),
    ((9,), [], [[1, 0]], {}, {}),
    ((8, 3), [[0]], [[0]], {}, {"halo_sizes": [1, 2]}),
    ((8, 3), [[1]], [[0, 1]], {"partial": {0: "sum"}}, {}),
    ((6, 5), [[], [1]], [[0]], {"partial": {0: "max"}}, {}),
]


def global_tensor(shape, seed=0):
    return np.random.default_rng(seed).integers(-20, 20, size=shape).astype(np.float32)


def collectives(dm):
    """Every collective on this rank's part of a few inputs."""
    m = dm.mesh
    r = dm.rank
    out = {}
    x = global_tensor((m.shape[0] * 3 + 1, 5), seed=1)
    s = Sharding(m, [[0]])
    t = local_part(x, s, r)
    out["all_gather"] = dm.all_gather(t, [0], 0)
    out["all_gather_yx"] = dm.all_gather(local_part(x, Sharding(m, [[1, 0]]), r), [1, 0], 0)
    out["all_slice"] = dm.all_slice(t, [1], 1)
    out["all_to_all"] = dm.all_to_all(t, [0], 1, 0)
    out["all_to_all_yx"] = dm.all_to_all(t, [1, 0], 1, 0)
    terms = torch.from_numpy(global_tensor((4, 3), seed=10 + r))
    for kind in ("sum", "max", "min", "prod"):
        out[f"all_reduce_{kind}"] = dm.all_reduce(terms, [0], kind)
        out[f"reduce_{kind}"] = dm.reduce(terms, [1], [m.shape[1] - 1], kind)
        out[f"reduce_scatter_{kind}"] = dm.reduce_scatter(terms, [1, 0], 0, kind)
    out["all_reduce_wide"] = dm.all_reduce(terms.to(torch.int8), [0, 1], "sum", dtype=np.int32)
    out["broadcast"] = dm.broadcast(terms, [0], [1])
    out["gather"] = dm.gather(t, [0], 0, [1])
    out["scatter"] = dm.scatter(torch.from_numpy(global_tensor((7, 2), seed=r)), [1], 0, [0])
    out["permute"] = dm.permute(terms, [(0, m.size - 1), (m.size - 1, 0), (1, 2)])
    out["shift"] = dm.shift(terms, [1], 1, 1, rotate=True)
    out["shift_plain"] = dm.shift(terms, [0, 1], 0, -1)
    h = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 2, 0])
    hx = global_tensor((7, 9), seed=3)
    stale = local_part(hx, h, r).clone()
    stale[0] = -99  # corrupt the lower halo row
    out["update_halo"] = dm.update_halo(stale, h, hx.shape)
    return out


def reshards(dm):
    out = []
    for i, (shape, a, b, ka, kb) in enumerate(RESHARD_CASES):
        x = global_tensor(shape, seed=i)
        src, tgt = Sharding(dm.mesh, a, **ka), Sharding(dm.mesh, b, **kb)
        out.append(dist_reshard(local_part(x, src, dm.rank), src, tgt, shape, dm))
    return out


def dies_mid_plan(dm):
    """Rank 1 dies between two reshards; the others must fail, not hang."""
    m = dm.mesh
    x = global_tensor((8, 8))
    s, t = Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]])
    y = dist_reshard(local_part(x, s, dm.rank), s, t, x.shape, dm)
    if dm.rank == 1:
        os._exit(3)
    time.sleep(0.5)
    return dist_reshard(y, t, s, x.shape, dm)


def raises_on_rank_0(dm):
    if dm.rank == 0:
        raise ValueError("boom on purpose")
    return dm.all_reduce(torch.ones(2), [0, 1])
