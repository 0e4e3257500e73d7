"""Reshard on torch.distributed (gloo, 2x2 mesh, one process per device, this machine):
wall time of meshtensor's dist_reshard vs DTensor's redistribute for the same pair,
16 MiB float32 tensors, measured in the same processes in the same run (medians,
the two engines alternating who goes first; minima shown too).

Then the DTensor bridge: ``meshtensor.dist.redistribute(dt, placements)`` against
``dt.redistribute(mesh, placements)`` on the same DTensors (time as above; bytes: our
plan's ``bytes_moved`` against DTensor's own plan costed with bench_reshard's model).

    python benchmarks/bench_dist.py [--quick]

``--quick`` runs every pair twice on 1 MiB (a test runs it, so a broken benchmark fails
the suite); its numbers are not measurements.
"""
import os
import sys
import time
from statistics import median

import numpy as np
import torch
import torch.distributed as dist

from meshtensor import Sharding, plan_reshard
from meshtensor.dist import dist_reshard, local_part, redistribute, run

sys.path.insert(0, os.path.dirname(__file__))
from bench_reshard import dtensor_bytes  # noqa: E402

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


def bench(dm, repeat=9, n=N):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import DTensor
    x = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
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


BRIDGE_PAIRS = [  # (name, DTensor source placements, target placements)
    ("swap S0 S1 -> S1 S0", "S(0) S(1)", "S(1) S(0)"),
    ("swap S0 S0 -> S1 S1", "S(0) S(0)", "S(1) S(1)"),
    ("move S0 R -> S1 R", "S(0) R", "S(1) R"),
    ("gather S0 S1 -> R R", "S(0) S(1)", "R R"),
    ("split R R -> S0 S0", "R R", "S(0) S(0)"),
    ("reduce P R -> S0 R", "P(sum) R", "S(0) R"),
    ("reduce P R -> R R", "P(sum) R", "R R"),
]


def bench_bridge(dm, repeat=9, n=N):
    """Bridge vs DTensor.redistribute on the same DTensor: medians, minima, bytes."""
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor import _redistribute as R
    dmesh = DeviceMesh("cpu", torch.arange(4).reshape(2, 2))
    x = np.random.default_rng(dm.rank).standard_normal((n, n), dtype=np.float32)
    out = []
    for name, a, b in BRIDGE_PAIRS:
        src = Sharding.from_placements(dm.mesh, a.split(), 2, x.shape)
        tgt_pl = Sharding.from_placements(dm.mesh, b.split(), 2, x.shape).to_placements()
        local = local_part(x, src.replace(partial=None), dm.rank)
        dt = DTensor.from_local(local, dmesh, src.to_placements(), run_check=False)
        ours, theirs = [], []

        def timed(fn, times):
            dist.barrier()
            t0 = time.perf_counter()
            y = fn()
            dist.barrier()
            times.append(time.perf_counter() - t0)
            return y

        for i in range(repeat):  # alternate who goes first
            first, second = ((ours, lambda: redistribute(dt, tgt_pl)),
                             (theirs, lambda: dt.redistribute(dmesh, tgt_pl)))[::1 if i % 2 else -1]
            r1 = timed(first[1], first[0])
            r2 = timed(second[1], second[0])
        y, z = (r1, r2) if first[0] is ours else (r2, r1)
        assert torch.equal(y.to_local(), z.to_local()), name
        ours_b = plan_reshard(src, Sharding.from_placements(dm.mesh, b.split(), 2, x.shape),
                              x.shape, 4).bytes_moved
        theirs_b = dtensor_bytes(R._gen_transform_infos_non_cached(dt._spec, z._spec), (2, 2))
        out.append((name, median(ours), median(theirs), min(ours), min(theirs), ours_b, theirs_b))
    return out


def main() -> None:
    import argparse
    import logging
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="1 MiB, two runs each: checks that it runs")
    quick = ap.parse_args().quick
    repeat, n = (2, 512) if quick else (9, N)
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    res = run(bench, (2, 2), repeat, n, timeout=120)[0]
    print(f"2x2 mesh, gloo, {n}x{n} float32 ({n * n * 4 / 2**20:.0f} MiB), {repeat} runs each, "
          f"4 processes on this machine's cores")
    print(f"{'pair':24s} {'ours ms':>9s} {'DTensor ms':>11s} {'DTensor/ours':>13s} "
          f"{'(min: ours':>11s} {'DTensor)':>9s}")
    for name, a, b, amin, bmin in res:
        print(f"{name:24s} {a * 1e3:9.1f} {b * 1e3:11.1f} {b / a:13.2f} {amin * 1e3:11.1f} "
              f"{bmin * 1e3:9.1f}")
    bridge = run(bench_bridge, (2, 2), repeat, n, timeout=120)[0]
    print(f"\nDTensor bridge: meshtensor.dist.redistribute(dt, p) vs dt.redistribute(mesh, p), "
          f"same DTensors, {n}x{n} float32")
    print(f"{'pair':22s} {'ours ms':>8s} {'DTensor ms':>10s} {'DT/ours':>8s} {'(min: ours':>11s} "
          f"{'DTensor)':>9s} {'ours MiB':>9s} {'DT MiB':>8s} {'DT/ours B':>10s}")
    for name, a, b, amin, bmin, ab, bb in bridge:
        ratio = f"{bb / ab:10.2f}" if ab else f"{'inf' if bb else '-':>10s}"
        print(f"{name:22s} {a * 1e3:8.1f} {b * 1e3:10.1f} {b / a:8.2f} {amin * 1e3:11.1f} "
              f"{bmin * 1e3:9.1f} {ab / 2**20:9.1f} {bb / 2**20:8.1f} {ratio}")


if __name__ == "__main__":
    main()
