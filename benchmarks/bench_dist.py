"""Reshard on torch.distributed (gloo, 2x2 mesh, one process per device, this machine):
wall time of meshtensor's dist_reshard vs DTensor's redistribute for the same pair,
16 MiB float32 tensors, measured in the same processes in the same run (medians,
the two engines alternating who goes first; minima shown too).

    python benchmarks/bench_dist.py
"""
import time
from statistics import median

import numpy as np
import torch
import torch.distributed as dist

from meshtensor import Sharding
from meshtensor.dist import dist_reshard, local_part, run

N = 2048  # 2048 x 2048 float32 = 16 MiB
PAIRS = [  # (name, src split_axes, tgt split_axes, DTensor src, DTensor tgt)
    ("S(x)S(y) -> S(y)S(x)", [[0], [1]], [[1], [0]], "S0 S1", "S1 S0"),
    ("S(x) -> RS(x)", [[0]], [[], [0]], "S0 R", "S1 R"),
    ("S(x)S(y) -> R", [[0], [1]], [], "S0 S1", "R R"),
    ("R -> S(x,y)", [], [[0, 1]], "R R", "S0 S0"),
]


def _pl(text):
    from torch.distributed.tensor import Replicate, Shard
    return [Replicate() if p == "R" else Shard(int(p[1:])) for p in text.split()]


def bench(dm, repeat=9):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import DTensor
    x = np.random.default_rng(0).standard_normal((N, N), dtype=np.float32)
    dmesh = DeviceMesh("cpu", torch.arange(4).reshape(2, 2))
    out = []
    for name, a, b, da, db in PAIRS:
        src, tgt = Sharding(dm.mesh, a), Sharding(dm.mesh, b)
        local = local_part(x, src, dm.rank)
        ours, theirs = [], []
        dt = DTensor.from_local(local.clone(), dmesh, _pl(da), run_check=False)
        def time_ours():
            dist.barrier()
            t0 = time.perf_counter()
            y = dist_reshard(local, src, tgt, x.shape, dm)
            dist.barrier()
            ours.append(time.perf_counter() - t0)
            return y

        def time_theirs():
            dist.barrier()
            t0 = time.perf_counter()
            z = dt.redistribute(dmesh, _pl(db)).to_local()
            dist.barrier()
            theirs.append(time.perf_counter() - t0)
            return z

        for i in range(repeat):  # alternate who goes first
            if i % 2:
                z, y = time_theirs(), time_ours()
            else:
                y, z = time_ours(), time_theirs()
        assert torch.equal(y, z), name  # same local result on every rank
        out.append((name, median(ours), median(theirs), min(ours), min(theirs)))
    return out


def main() -> None:
    res = run(bench, (2, 2), timeout=120)[0]
    print(f"2x2 mesh, gloo, {N}x{N} float32 ({N * N * 4 / 2**20:.0f} MiB), 9 runs each, "
          f"4 processes on this machine's cores")
    print(f"{'pair':24s} {'ours ms':>9s} {'DTensor ms':>11s} {'DTensor/ours':>13s} "
          f"{'(min: ours':>11s} {'DTensor)':>9s}")
    for name, a, b, amin, bmin in res:
        print(f"{name:24s} {a * 1e3:9.1f} {b * 1e3:11.1f} {b / a:13.2f} {amin * 1e3:11.1f} "
              f"{bmin * 1e3:9.1f}")


if __name__ == "__main__":
    main()
