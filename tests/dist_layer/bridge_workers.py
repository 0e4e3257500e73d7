"""Run on every rank by test_dtensor_bridge.py (module-level: pickled by run)."""
import itertools

import numpy as np
import torch

from meshtensor import Sharding
from meshtensor.dist import redistribute

# One shape per mesh, dim 0 even (divides by every shard count) and dim 1 uneven, so
# every pair meets even and uneven sizes while the processes start only once.
SHAPES = {(2, 2): [(8, 5)], (2, 3): [(12, 7)]}
SOURCE_OPTIONS = ["R", "S(0)", "S(1)", "P(sum)"]
TARGET_OPTIONS = ["R", "S(0)", "S(1)"]


def pairs(ndim_mesh):
    """Every (source, target) placement pair; Partial targets only equal to the source."""
    out = []
    for src in itertools.product(SOURCE_OPTIONS, repeat=ndim_mesh):
        for tgt in itertools.product(TARGET_OPTIONS, repeat=ndim_mesh):
            out.append((src, tgt))
        if "P(sum)" in src:
            out.append((src, src))
    return out


def terms(shape, rank):
    """Integer-valued float32 data, one array per rank (so sums are exact)."""
    return np.random.default_rng(rank).integers(-9, 9, size=shape).astype(np.float32)


def source_local(s, shape, rank):
    """This rank's local tensor under sharding ``s``: a partial term (its own data) or
    the layout's part."""
    data = terms(shape, rank if s.partial_axes else 0)
    return torch.from_numpy(data[s.local_region(shape, rank)].copy())


def bridge_all_pairs(dm):
    """For every pair and shape: (ours, DTensor's) local result on this rank; and what
    each bad call raises."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor

    device_mesh = init_device_mesh("cpu", dm.mesh.shape)
    out = {"errors": bridge_errors(device_mesh)}
    for shape in SHAPES[dm.mesh.shape]:
        for src, tgt in pairs(dm.mesh.ndim):
            s = Sharding.from_placements(dm.mesh, list(src), len(shape), shape)
            local = source_local(s, shape, dm.rank)
            pl = s.to_placements(shape)
            dt = DTensor.from_local(local, device_mesh, pl, run_check=False, shape=torch.Size(shape),
                                    stride=torch.empty(shape).stride())
            ours = redistribute(dt, list(tgt))
            theirs = dt.redistribute(device_mesh, [p for p in ours.placements])
            assert ours.placements == theirs.placements and ours.shape == theirs.shape
            assert ours.stride() == theirs.stride()
            out[(shape, src, tgt)] = (ours.to_local(), theirs.to_local())
    return out


def bridge_errors(device_mesh):
    """What each bad call raises on a 2-D mesh: {case: (exception type, message)}."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    x = torch.zeros(4, 4)
    dt = DTensor.from_local(x, device_mesh, [Shard(0), Replicate()], run_check=False)
    cases = {
        "partial target": lambda: redistribute(dt, ["R", "P(sum)"]),
        "avg source": lambda: redistribute(
            DTensor.from_local(x, device_mesh, [Partial("avg"), Replicate()], run_check=False),
            ["R", "R"]),
        "too few placements": lambda: redistribute(dt, ["R"]),
        "requires grad": lambda: redistribute(
            DTensor.from_local(x.clone().requires_grad_(), device_mesh, [Replicate(), Replicate()],
                               run_check=False), ["R", "R"]),
        "not a DTensor": lambda: redistribute(x, ["R", "R"]),
    }
    out = {}
    for name, fn in cases.items():
        try:
            fn()
            out[name] = ("no error", "")
        except Exception as e:  # reported to the test, which checks type and text
            out[name] = (type(e).__name__, str(e))
    return out
