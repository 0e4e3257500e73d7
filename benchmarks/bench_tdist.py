"""A ring all_gather between chips, in process: the T.dist emulator against NumPy.

    python benchmarks/bench_tdist.py [--ranks 4] [--mesh 2] [--mib 1] [--rounds 7] [--quick]

Each of ``ranks`` chips (an ``n x n`` mesh each) holds ``mib`` MiB per core; a ring
all_gather over the chips (``ranks - 1`` steps: every core puts the block it got in the
previous step to the corresponding core of the next chip, then waits for the next
block) leaves every core with every chip's block. Baseline: NumPy doing the same
exchange (the same loads, block copies and stores, per core) in the same run. Reports
medians of interleaved rounds and the ratio emulator / NumPy (the goal is <= 3).
``--quick`` uses 64 KiB per core and 3 rounds (a test runs it).
"""
import argparse
import time
from statistics import median

import numpy as np
import torch

import tilelang  # noqa: F401  (before tvm)
import tilelang.language as T

from meshtensor.tilelang import compile_mesh_kernel
from meshtensor.tilelang import tilelang_mesh as tm


def ring_all_gather(W: int, n: int, M: int):
    """Every core's ``M`` floats gathered over ``W`` chips by a ring of puts."""
    C = n * n
    tm.enable(mesh=(n, n))
    with tm.world(W):
        @T.prim_func
        def ring(A: T.Tensor((C, M), "float32"), B: T.Tensor((C, W * M), "float32"),
                 rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                s = T.dist.signal()
                T.copy(A[bx, 0:M], B[bx, rank_id * M:(rank_id + 1) * M])
                for step in T.serial(W - 1):  # the ring runs in the output (DRAM)
                    blk = (rank_id + W - step) % W
                    T.dist.put(B[bx, blk * M:(blk + 1) * M], B[bx, blk * M:(blk + 1) * M],
                               (rank_id + 1) % W, signal=s, submit=True)
                    T.dist.wait_signal(s)
    return compile_mesh_kernel(ring)


def numpy_ring(A: list, out: list, W: int, C: int) -> list:
    """The same exchange in NumPy, into preallocated outputs ``out`` (rank ``r``'s is
    ``(C, W, M)``): per rank the load of its own block, then ``W - 1`` block copies per
    core along the ring."""
    for r in range(W):
        out[r][:, r] = A[r]
    for step in range(W - 1):
        for r in range(W):
            blk = (r - step) % W
            nxt = (r + 1) % W
            for c in range(C):
                out[nxt][c, blk] = out[r][c, blk]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--mesh", type=int, default=2, help="n for an n x n mesh per chip")
    ap.add_argument("--mib", type=float, default=1.0, help="MiB per core (default 1)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="64 KiB per core, 3 rounds")
    args = ap.parse_args()
    if args.quick:
        args.mib, args.rounds = 1 / 16, 3
    W, n = args.ranks, args.mesh
    C = n * n
    M = max(1, int(args.mib * 2 ** 20) // 4)
    kernel = ring_all_gather(W, n, M)
    rng = np.random.default_rng(0)
    A = [rng.standard_normal((C, M)).astype(np.float32) for _ in range(W)]
    per = [[torch.from_numpy(A[r].copy()), torch.zeros(C, W * M)] for r in range(W)]

    def emulate() -> None:
        kernel.run_ranks(per)

    out = [np.empty((C, W, M), np.float32) for _ in range(W)]
    want = [o.reshape(C, W * M).copy() for o in numpy_ring(A, out, W, C)]
    emulate()
    for r in range(W):
        if not np.array_equal(per[r][1].numpy(), want[r]):
            raise SystemExit(f"bench_tdist: rank {r}'s result differs from NumPy's")
    t_emu, t_np = [], []
    for _ in range(args.rounds):  # interleaved: both see the same machine load
        t0 = time.perf_counter()
        emulate()
        t_emu.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        numpy_ring(A, out, W, C)
        t_np.append(time.perf_counter() - t0)
    e, b = median(t_emu), median(t_np)
    moved = (W - 1) * W * C * M * 4
    print(f"ring all_gather: {W} ranks x {n}x{n} cores, {M * 4 / 2 ** 20:g} MiB per core, "
          f"{moved / 2 ** 20:g} MiB between chips; medians of {args.rounds} interleaved "
          f"rounds")
    print(f"{'':10s} {'ms':>9s} {'GiB/s':>7s}")
    print(f"{'numpy':10s} {b * 1e3:9.2f} {moved / b / 2 ** 30:7.2f}")
    print(f"{'T.dist':10s} {e * 1e3:9.2f} {moved / e / 2 ** 30:7.2f}")
    print(f"ratio T.dist / numpy: {e / b:.2f} (goal <= 3)")


if __name__ == "__main__":
    main()
