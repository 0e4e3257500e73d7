"""Functions run on every rank by the dist tests (module-level: they are pickled)."""
import collections
import contextlib
import os
import time
import warnings

import numpy as np
import torch

from meshtensor import Mesh, Sharding
from meshtensor.dist import DistMesh, dist_reshard, local_part

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


# Dtypes gloo lacks: the engine moves them as same-size types and reduces them wider.
ODD_DTYPES = ("int16", "uint16", "uint32", "uint64")


def odd_values(dtype, rank):
    """Values that wrap and use the top bit in ``dtype`` (integer casts wrap in NumPy)."""
    raw = np.random.default_rng(30 + rank).integers(0, 2 ** 63, size=(5, 3), dtype=np.uint64)
    return (raw * np.uint64(2 + rank)).astype(dtype)


def odd_dtype_ops(C, v):
    """The same ops on the engine (``C`` a DistMesh) or the simulator (``C`` the
    collectives module, ``v`` a MeshArray)."""
    return {"all_reduce_sum": C.all_reduce(v, [0, 1], "sum"),
            "all_reduce_max": C.all_reduce(v, [0], "max"),
            "reduce_prod": C.reduce(v, [1], [0], "prod"),
            "reduce_scatter_min": C.reduce_scatter(v, [1, 0], 0, "min"),
            "all_gather": C.all_gather(v, [0], 1),
            "all_to_all": C.all_to_all(v, [1], 0, 1)}


def as_kind(t, as_numpy):
    """``t`` (a torch tensor) as the engine's input: itself or a NumPy array (read-only
    for some inputs: the engine must copy what torch cannot share)."""
    if not as_numpy:
        return t
    a = t.numpy().copy()
    a.flags.writeable = t.ndim != 2
    return a


def collectives(dm, as_numpy=False):
    """Every collective on this rank's part of a few inputs (torch tensors, or NumPy
    arrays with ``as_numpy``)."""
    m = dm.mesh
    r = dm.rank
    out = {}
    x = global_tensor((m.shape[0] * 3 + 1, 5), seed=1)
    s = Sharding(m, [[0]])
    t = as_kind(local_part(x, s, r), as_numpy)
    out["all_gather"] = dm.all_gather(t, [0], 0)
    out["all_gather_yx"] = dm.all_gather(as_kind(local_part(x, Sharding(m, [[1, 0]]), r),
                                                 as_numpy), [1, 0], 0)
    out["all_slice"] = dm.all_slice(t, [1], 1)
    out["all_to_all"] = dm.all_to_all(t, [0], 1, 0)
    out["all_to_all_yx"] = dm.all_to_all(t, [1, 0], 1, 0)
    terms = as_kind(torch.from_numpy(global_tensor((4, 3), seed=10 + r)), as_numpy)
    for kind in ("sum", "max", "min", "prod"):
        out[f"all_reduce_{kind}"] = dm.all_reduce(terms, [0], kind)
        out[f"reduce_{kind}"] = dm.reduce(terms, [1], [m.shape[1] - 1], kind)
        out[f"reduce_scatter_{kind}"] = dm.reduce_scatter(terms, [1, 0], 0, kind)
    out["all_reduce_wide"] = dm.all_reduce(as_kind(torch.from_numpy(global_tensor(
        (4, 3), seed=10 + r)).to(torch.int8), as_numpy), [0, 1], "sum", dtype=np.int32)
    out["broadcast"] = dm.broadcast(terms, [0], [1])
    out["gather"] = dm.gather(t, [0], 0, [1])
    out["scatter"] = dm.scatter(as_kind(torch.from_numpy(global_tensor((7, 2), seed=r)),
                                        as_numpy), [1], 0, [0])
    out["permute"] = dm.permute(terms, [(0, m.size - 1), (m.size - 1, 0), (1, 2)])
    out["shift"] = dm.shift(terms, [1], 1, 1, rotate=True)
    out["shift_plain"] = dm.shift(terms, [0, 1], 0, -1)
    for dt in ODD_DTYPES:
        v = as_kind(torch.from_numpy(odd_values(dt, r)), as_numpy)
        for name, got in odd_dtype_ops(dm, v).items():
            out[f"{dt}_{name}"] = got
    h = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 2, 0])
    hx = global_tensor((7, 9), seed=3)
    stale = local_part(hx, h, r).clone()
    stale[0] = -99  # corrupt the lower halo row
    out["update_halo"] = dm.update_halo(as_kind(stale, as_numpy), h, hx.shape)
    return out


def reshards(dm, as_numpy=False):
    out = []
    for i, (shape, a, b, ka, kb) in enumerate(RESHARD_CASES):
        x = global_tensor(shape, seed=i)
        src, tgt = Sharding(dm.mesh, a, **ka), Sharding(dm.mesh, b, **kb)
        out.append(dist_reshard(as_kind(local_part(x, src, dm.rank), as_numpy), src, tgt,
                                shape, dm))
    return out


def kinds(results):
    """The type names of a dict's or list's values (results cross to the test as NumPy)."""
    values = results.values() if isinstance(results, dict) else results
    return sorted({type(v).__name__ for v in values})


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
    """Rank 0 raises after a first collective; the others then make a sub-group (its
    rendezvous store lives on rank 0, which is gone: torch's C++ layer logs a warning
    with a backtrace there unless run() turned that logging off)."""
    dm.all_reduce(torch.ones(2), [0, 1])
    if dm.rank == 0:
        raise ValueError("boom on purpose")
    return dm.all_reduce(torch.ones(2), [0])


@contextlib.contextmanager
def counting_comm_calls():
    """Count the engine's calls of torch.distributed's communication functions (it calls
    them as ``dist.<name>``), as DTensor's tests count comm ops. Lighter than DTensor's
    CommDebugMode, whose import costs seconds of CPU in every process."""
    import torch.distributed as dist
    calls = collections.Counter()
    saved = {n: getattr(dist, n) for n in COMM_CALLS}

    def counted(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return call

    for name, fn in saved.items():
        setattr(dist, name, counted(name, fn))
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)


# isend/irecv stay unwrapped: P2POp checks their identity (the engine batches them).
COMM_CALLS = ("all_gather", "all_gather_single", "all_gather_into_tensor", "all_reduce",
              "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter",
              "broadcast", "all_to_all", "all_to_all_single", "batch_isend_irecv", "send",
              "recv", "barrier")


# -- the engine's promises (issue 13) -----------------------------------------------------
def everything(dm, late=None, short_timeout=2.0):
    """Every check of test_dist.py in one job (each spawn costs seconds of start-up),
    with warnings as errors (a deprecated torch API fails the job). The late-peer check
    comes last: it leaves rank 0's short-timeout sub-group broken."""
    from meshtensor.dist import DistCollectiveError
    warnings.simplefilter("error")
    out = {"collectives": collectives(dm), "reshards": reshards(dm)}
    # The same with NumPy inputs: NumPy results, equal to the simulator's.
    out["collectives_numpy"] = collectives(dm, as_numpy=True)
    out["reshards_numpy"] = reshards(dm, as_numpy=True)
    out["kinds"] = {k: kinds(out[k]) for k in ("collectives", "reshards", "collectives_numpy",
                                                "reshards_numpy")}
    v = np.ones(2, np.float32)
    peers = [p for p in range(dm.mesh.size) if p != dm.rank]
    got = dm.exchange({p: v * dm.rank for p in peers}, {p: (2,) for p in peers}, np.float32)
    out["exchange_numpy"] = (kinds(got), {p: a.tolist() for p, a in got.items()})
    # dist_reshard knows every local shape: one transport op per collective step
    # (the sub-groups exist now: reshards() made them).
    counts = []
    for i, (shape, a, b, ka, kb) in enumerate(RESHARD_CASES):
        src, tgt = Sharding(dm.mesh, a, **ka), Sharding(dm.mesh, b, **kb)
        mine = local_part(global_tensor(shape, seed=i), src, dm.rank)
        with counting_comm_calls() as calls:
            dist_reshard(mine, src, tgt, shape, dm)
        counts.append(dict(calls))
    out["reshard_comm_counts"] = counts
    # Unsafe accumulation dtypes are refused before any communication.
    v = torch.tensor([300, -7], dtype=torch.int32)
    errors = []
    for call in (lambda: dm.all_reduce(v, [0], dtype=np.int8),
                 lambda: dm.reduce(v, [1], [0], dtype=torch.int16),
                 lambda: dm.reduce_scatter(v, [0], 0, dtype=np.float16),
                 lambda: dm.all_reduce(v.to(torch.float32), [0], dtype=torch.bfloat16)):
        try:
            call()
            errors.append("no error")
        except ValueError as e:
            errors.append(str(e))
    out["dtype_errors"] = errors
    out["widened"] = dm.all_reduce(v, [0], dtype=torch.int64)
    out["errors"] = bad_calls(dm)
    # A DistMesh made without a timeout takes the default process group's.
    out["default_timeout"] = DistMesh(dm.mesh).timeout.total_seconds()
    if late is None:
        return out
    # A late peer on a sub-group of a DistMesh with a short timeout: rank 0 gives up
    # after about that timeout (rank 1 stays alive, so only the timeout ends the wait).
    short = DistMesh(dm.mesh, timeout=short_timeout)
    short.all_reduce(torch.ones(1), [1])  # every rank makes the axis-1 groups; they work
    t0 = time.monotonic()
    if dm.rank == 1:
        time.sleep(late)
        out["late"] = "slept"
        return out
    try:
        short.all_reduce(torch.ones(1), [1])
        out["late"] = ("ok", time.monotonic() - t0, "")
    except DistCollectiveError as e:
        out["late"] = ("failed", time.monotonic() - t0, str(e))
    if dm.rank == 0:
        # a point-to-point exchange with the (still sleeping) late peer: it runs on a
        # group of every rank with the short timeout, not the default group's 60 s
        t0 = time.monotonic()
        try:
            short.exchange({}, {1: (2,)}, np.float32)
            out["late_exchange"] = ("ok", time.monotonic() - t0, "")
        except DistCollectiveError as e:
            out["late_exchange"] = ("failed", time.monotonic() - t0, str(e))
    return out


def bad_calls(dm):
    """The engine's own argument errors, by name (raised before any communication)."""
    m, r = dm.mesh, dm.rank
    t = torch.zeros(dm.mesh.shape[0], 3)
    other = Sharding(Mesh((m.size,)), [[0]])
    calls = {
        "reshard-mesh": lambda: dist_reshard(t, other, other, (m.size, 3), dm),
        "reshard-type": lambda: dist_reshard(t, Sharding(m, [[0]]), [[0]], (4, 3), dm),
        "shapes-rank": lambda: dm.all_gather(t, [0], 0, shapes=[(2,)] * m.size),
        "shapes-mine": lambda: dm.all_reduce(t, [0], shapes=[(9, 3)] * m.size),
        "timeout": lambda: DistMesh(m, timeout=0),
        "dtype": lambda: dm.all_reduce(t, [0], dtype="nope"),
        "x-list": lambda: dm.all_gather([1.0, 2.0], [0], 0),
        "x-strings": lambda: dm.broadcast(np.array(["a", "b"]), [0], [0]),
        "numpy-bfloat16": lambda: dm.all_reduce(t.numpy(), [0], "sum", torch.bfloat16),
        "reshard-local": lambda: dist_reshard([[0.0]], Sharding(m, []), Sharding(m, []),
                                              (1, 1), dm),
    }
    out = {}
    for name, call in calls.items():
        try:
            call()
            out[name] = "no error"
        except (TypeError, ValueError) as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


def hangs_on_rank_0(dm):
    """Rank 0 never returns (outside any collective: no timeout can end it)."""
    if dm.rank == 0:
        time.sleep(3600)
    return dm.rank


def environment(dm, name):
    """This rank's value of the environment variable ``name`` and its parent's pid."""
    return os.environ.get(name), os.getppid()


def prints(dm, text):
    """Print ``text`` on this rank's stdout; return the rank."""
    print(text, flush=True)
    return dm.rank


def count_and_sum(dm, tensors):
    """How many tensors arrived, and the sum of their values."""
    return len(tensors), float(sum(float(t.sum()) for t in tensors))


def raises_on_rank_2(dm):
    """Rank 2 raises after a first collective; the others lose it in the next one."""
    x = torch.ones(4)
    dm.all_reduce(x, [0, 1])
    if dm.rank == 2:
        raise ValueError("boom on rank 2")
    return dm.all_reduce(x, [0, 1])
