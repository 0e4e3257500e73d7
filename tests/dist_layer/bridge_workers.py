"""Run on every rank by test_dtensor_bridge.py (module-level: pickled by run)."""
import contextlib
import itertools
import logging

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
    cases = [(shape, src, tgt) for shape in SHAPES[dm.mesh.shape]
             for src, tgt in pairs(dm.mesh.ndim)]
    sources, ours = {}, {}
    # Ours first, before any DTensor redistribute: torch logs its gloo all-to-all
    # fallback warning once per process, so a later record would be hidden.
    with torch_log_records() as records:
        for shape, src, tgt in cases:
            s = Sharding.from_placements(dm.mesh, list(src), len(shape), shape)
            dt = DTensor.from_local(source_local(s, shape, dm.rank), device_mesh,
                                    s.to_placements(shape), run_check=False,
                                    shape=torch.Size(shape), stride=torch.empty(shape).stride())
            sources[(shape, src, tgt)] = dt
            ours[(shape, src, tgt)] = redistribute(dt, list(tgt))
    out["torch_log"] = [r.getMessage() for r in records]
    for key in cases:
        mine = ours[key]
        theirs = sources[key].redistribute(device_mesh, [p for p in mine.placements])
        assert mine.placements == theirs.placements and mine.shape == theirs.shape
        assert mine.stride() == theirs.stride()
        out[key] = (mine.to_local(), theirs.to_local())
    return out


@contextlib.contextmanager
def torch_log_records():
    """Every record torch's loggers emit at WARNING or above meanwhile (torch's logging
    stops propagation at several levels, so the handler goes on each torch logger)."""
    records = {}
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.setdefault(id(record), record)
    names = [n for n in list(logging.root.manager.loggerDict)
             if n == "torch" or n.startswith("torch.")]
    loggers = [logging.getLogger(n) for n in names]
    for logger in loggers:
        logger.addHandler(handler)
    got = []
    try:
        yield got
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        got += records.values()


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
