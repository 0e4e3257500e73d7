"""Reshard plans: our bytes vs the lower bound, vs PyTorch DTensor, and planner latency.

    python benchmarks/bench_reshard.py

For each case (2-D and 3-D meshes, even and uneven, seed 001's TODO cases) it prints,
in one run: our ``bytes_moved / lower_bound``; DTensor's bytes for the same
``redistribute`` (its own plan from ``_gen_transform_infos``, costed with our model:
direct collectives, all_gather / reduce_scatter padded to equal chunks as DTensor
sends them) and the collectives it really issues (counted with ``CommDebugMode`` under
``LocalTensorMode`` on CPU, one fake process group); and the median planner latency of
both. Then our planner latency on a 32x32 mesh with rank-3 tensors.
"""
import os
import sys
import time
from statistics import median

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import meshtensor as mt  # noqa: E402

# (name, mesh shape, global shape, src split_axes, tgt split_axes, src partial axes,
#  DTensor src placements, DTensor tgt placements) ; "S0" = Shard(0), "R", "P".
CASES = [
    ("swap S(x)S(y)->S(y)S(x)", (4, 4), (1024, 1024), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("move S(x)->RS(x)", (4, 4), (1024, 1024), [[0]], [[], [0]], None, "S0 R", "S1 R"),
    ("gather S(x)S(y)->R", (4, 4), (1024, 1024), [[0], [1]], [], None, "S0 S1", "R R"),
    ("split R->S(x,y)", (4, 4), (1024, 1024), [], [[0, 1]], None, "R R", "S0 S0"),
    ("S(x,y)->S(x)S(y)", (4, 4), (1024, 1024), [[0, 1]], [[0], [1]], None, "S0 S0", "S0 S1"),
    ("uneven swap 1000x999", (4, 4), (1000, 999), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed 2x3 swap 6x6", (2, 3), (6, 6), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed 2x6 swap 6x6", (2, 6), (6, 6), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed [[0],[1,2]]->[[0],[2]]", (2, 2, 2), (64, 128), [[0], [1, 2]], [[0], [2]], None,
     "S0 S1 S1", "S0 R S1"),
    ("seed [[0],[1,2]]->[[0,1],[2]]", (2, 2, 2), (64, 64), [[0], [1, 2]], [[0, 1], [2]], None,
     "S0 S1 S1", "S0 S0 S1"),
    ("3-D S(x)S(y)S(z)->S(z)S(y)S(x)", (2, 2, 2), (64, 64, 64), [[0], [1], [2]], [[2], [1], [0]],
     None, "S0 S1 S2", "S2 S1 S0"),
    ("partial P(x)->S(x)", (4, 4), (1024, 1024), [], [[0]], [0], "P R", "S0 R"),
    ("partial P(x)->R", (4, 4), (1024, 1024), [], [], [0], "P R", "R R"),
]


def ours(mesh_shape, shape, src, tgt, partial):
    m = mt.Mesh(mesh_shape)
    s = mt.Sharding(m, src, partial={a: "sum" for a in partial} if partial else None)
    t = mt.Sharding(m, tgt)
    plan = mt.plan_reshard(s, t, shape, 4)
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        mt.plan_reshard(s, t, shape, 4)
        times.append(time.perf_counter() - t0)
    return plan, median(times)


def _placements(text):
    from torch.distributed.tensor import Partial, Replicate, Shard
    return [Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[1:]))
            for p in text.split()]


def dtensor(mesh_shape, shape, src, tgt):
    """DTensor's plan, its bytes under our cost model, its collectives, planner latency."""
    import torch
    from torch.distributed._local_tensor import LocalTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor
    from torch.distributed.tensor import _redistribute as R
    from torch.distributed.tensor.debug import CommDebugMode
    n = int(np.prod(mesh_shape))
    with LocalTensorMode(n):
        mesh = init_device_mesh("cpu", mesh_shape)
        x = torch.zeros(shape)
        d = distribute_tensor(x, mesh, _placements(src))
        with CommDebugMode() as comm:
            y = d.redistribute(mesh, _placements(tgt))
        infos = R._gen_transform_infos_non_cached(d._spec, y._spec)
        times = []
        for _ in range(30):
            t0 = time.perf_counter()
            R._gen_transform_infos_non_cached(d._spec, y._spec)
            times.append(time.perf_counter() - t0)
    total = 0
    for info in infos:
        k = mesh_shape[info.mesh_dim]
        a, b = info.src_dst_placements
        L = list(info.logical_shape)
        vol = int(np.prod(L))
        if a.is_shard() and b.is_replicate():  # all_gather of padded chunks
            chunk = -(-L[a.dim] // k) * vol // max(L[a.dim], 1)
            total += n * (k - 1) * chunk
        elif a.is_shard() and b.is_shard():  # all_to_all: k-1 of k pieces
            piece = -(-L[a.dim] // k) * -(-L[b.dim] // k) * vol // max(L[a.dim] * L[b.dim], 1)
            total += n * (k - 1) * piece
        elif a.is_partial() and b.is_replicate():
            total += n * 2 * (vol - vol // k)
        elif a.is_partial() and b.is_shard():
            total += n * (k - 1) * (-(-L[b.dim] // k) * vol // max(L[b.dim], 1))
    return total * 4, comm.get_total_counts(), median(times)


def main() -> None:
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=64)
    import logging
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    print(f"{'case':34s} {'mesh':6s} {'ours/LB':>8s} {'ours B':>10s} {'DTensor B':>10s} "
          f"{'DT/ours':>8s} {'DT colls':>8s} {'plan us':>8s} {'DT plan us':>10s}")
    worst = 1.0
    for name, mesh_shape, shape, src, tgt, partial, dsrc, dtgt in CASES:
        plan, t_ours = ours(mesh_shape, shape, src, tgt, partial)
        lb = plan.lower_bound_bytes
        ratio = plan.bytes_moved / lb if lb else 1.0
        if not partial:
            worst = max(worst, ratio)
        try:
            d_bytes, d_colls, t_dt = dtensor(mesh_shape, shape, dsrc, dtgt)
            dt = f"{d_bytes:10d} {d_bytes / max(plan.bytes_moved, 1):8.2f} {d_colls:8d} " \
                 f"{t_dt * 1e6:10.0f}"
        except Exception as e:  # a DTensor that cannot express the pair says so
            dt = f"{'n/a: ' + type(e).__name__:>39s}"
        print(f"{name:34s} {'x'.join(map(str, mesh_shape)):6s} {ratio:8.2f} "
              f"{plan.bytes_moved:10d} {dt} {t_ours * 1e6:8.0f}")
    print(f"worst ours/lower-bound over non-partial cases: {worst:.2f}")
    m = mt.Mesh([32, 32])
    for src, tgt in [([[0], [1]], [[1], [0]]), ([[0, 1]], [[1], [0], []]), ([[0]], [[], [], [1]])]:
        s, t = mt.Sharding(m, src), mt.Sharding(m, tgt)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            p = mt.plan_reshard(s, t, (4096, 4096, 64), 4)
            times.append(time.perf_counter() - t0)
        print(f"32x32 mesh, (4096, 4096, 64): {s} -> {t}: plan {median(times) * 1e3:.1f} ms, "
              f"{len(p.steps)} step(s) {[st.op for st in p.steps]}, ratio "
              f"{p.bytes_moved / max(p.lower_bound_bytes, 1):.2f}")


if __name__ == "__main__":
    main()
