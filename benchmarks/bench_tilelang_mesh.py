"""bfloat16 costs little on the C back end: the GEMM of SUNMMIO's examples (bfloat16
A and B, float32 accumulator and C, as the fork writes it) against the same kernel in
float32, at 1024^3 on a 4x4 mesh.

    python benchmarks/bench_tilelang_mesh.py [size] [--quick]   # default 1024

Baseline: the same kernel built with ``dtype="float32"``, compiled and run in the same
process. Target: the bfloat16 run takes at most 2x the float32 run (the narrow-float
lowering widens each bfloat16 load with a shift and rounds each bfloat16 store). Both
results are checked against NumPy (integer-valued data: exact). ``--quick`` runs 128^3
once each (the suite runs it; its ratio is printed, not held to the target).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import timeit  # noqa: E402

import numpy as np  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.kernels.tilelang_mesh_gemm import matmul  # noqa: E402
from meshtensor.tilelang.logs import quiet_tilelang  # noqa: E402

TARGET = 2.0


def main(size: int = 1024, quick: bool = False) -> float:
    """Print both runs' times and their ratio; return the ratio."""
    import torch

    torch.set_num_threads(1)
    tm.enable(mesh=(4, 4))
    n = size
    shard = -(-n // 4)
    bm, bk = min(64, shard), min(32, shard)
    print(f"4x4 mesh, C = A @ B, {n}x{n}x{n}, the fork's GEMM ({bm}x{bm} tiles of C, "
          f"k steps of {bk}), TileLang C backend")
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (n, n)).astype(np.float32)  # exact in bfloat16 and in sums
    b = rng.integers(-4, 5, (n, n)).astype(np.float32)
    want = a @ b
    times = {}
    for dtype in ("float32", "bfloat16"):
        with quiet_tilelang():
            kernel = compile_mesh_kernel(matmul(n, n, n, bm, bm, bk, dtype=dtype))
        ta = torch.from_numpy(a).to(getattr(torch, dtype))
        tb = torch.from_numpy(b).to(getattr(torch, dtype))
        c = torch.zeros(n, n)
        times[dtype] = timeit(lambda: kernel(ta, tb, c), repeat=1 if quick else 3,
                              warmup=0 if quick else 1)
        if not np.array_equal(c.numpy(), want):
            raise SystemExit(f"the {dtype} GEMM differs from NumPy")
        print(f"{dtype:>9s}: {times[dtype] * 1e3:9.1f} ms  "
              f"({2 * n ** 3 / times[dtype] / 1e9:5.2f} GFLOP/s)")
    ratio = times["bfloat16"] / times["float32"]
    print(f"ratio bfloat16 / float32: {ratio:.2f} (target <= {TARGET:g})")
    if not quick and ratio > TARGET:
        raise SystemExit(f"the bfloat16 GEMM takes {ratio:.2f}x the float32 one")
    return ratio


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", nargs="?", type=int, default=None,
                    help="M = N = K (default 1024; 128 with --quick)")
    ap.add_argument("--quick", action="store_true", help="128^3, one run each (for the tests)")
    args = ap.parse_args()
    size = args.size if args.size is not None else (128 if args.quick else 1024)
    if size < 1:
        ap.error(f"argument size: must be >= 1, got {size}")
    main(size, args.quick)
