"""Mesh GEMMs on a 4x4 mesh vs torch.mm, 1024x1024x1024 float32 on CPU, one run.

    python benchmarks/bench_gemm.py [size] [algorithm ...]

Baseline: ``torch.mm`` with the same thread count as the kernels (the C backend runs
the 16 programs on one thread, so ``torch.set_num_threads(1)``), measured in the same
run. Kernels compile with ``CPU_FLAGS`` (-O3 -march=native). Prints GFLOP/s, the ratio
to torch.mm, and for each distributed-memory kernel (``*_comm``) the ratio to its
global-view twin (``summa_comm`` / ``summa``, ``cannon_comm`` / ``cannon``). Aim: the
comm kernels >= 0.6x torch.mm at 1024^3.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
from _timing import timeit  # noqa: E402

from meshtensor.tilelang.gemm import ALGORITHMS, COMM_ALGORITHMS, run_gemm  # noqa: E402

TWIN = {"summa_comm": "summa", "cannon_comm": "cannon"}


def main() -> None:
    ap = argparse.ArgumentParser(description="Mesh GEMMs on a 4x4 mesh vs torch.mm")
    ap.add_argument("size", nargs="?", type=int, default=1024, help="M = N = K (default 1024)")
    ap.add_argument("algorithm", nargs="*", help=f"kernels to run (default: all of "
                    f"{', '.join(ALGORITHMS + COMM_ALGORITHMS)})")
    args = ap.parse_args()
    if args.size < 1:
        ap.error(f"argument size: must be >= 1, got {args.size}")
    unknown = [a for a in args.algorithm if a not in ALGORITHMS + COMM_ALGORITHMS]
    if unknown:
        ap.error(f"argument algorithm: unknown {unknown}; choose from "
                 f"{', '.join(ALGORITHMS + COMM_ALGORITHMS)}")
    n, algs = args.size, args.algorithm or list(ALGORITHMS + COMM_ALGORITHMS)
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    base = 2 * n ** 3 / timeit(lambda: torch.mm(a, b), repeat=5) / 1e9
    print(f"{n}x{n}x{n} float32, 1 thread")
    print(f"{'kernel':12s} {'GFLOP/s':>8s} {'x torch.mm':>10s} {'x global view':>13s} "
          f"{'max err':>9s}")
    print(f"{'torch.mm':12s} {base:8.1f} {1.0:10.2f} {'':>13s} {'':>9s}")
    seen = {}
    for alg in algs:
        r = run_gemm(alg, n, n, n, repeat=5)
        seen[alg] = r.gflops
        twin = TWIN.get(alg)
        vs = f"{r.gflops / seen[twin]:13.2f}" if twin in seen else f"{'':>13s}"
        print(f"{alg:12s} {r.gflops:8.1f} {r.gflops / base:10.2f} {vs} {r.max_abs_error:9.1e}")


if __name__ == "__main__":
    main()
