"""Mesh GEMMs on a 4x4 mesh vs torch.mm, 1024x1024x1024 float32 on CPU, one run.

    python benchmarks/bench_gemm.py [size]

Baseline: ``torch.mm`` with the same thread count as the kernels (the C backend runs
the 16 programs on one thread, so ``torch.set_num_threads(1)``), measured in the same
run. Kernels compile with -O3 -march=native. Prints GFLOP/s and the ratio to torch.mm
(aim: SUMMA >= 0.5x).
"""
import os
import sys
import time
from statistics import median


sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402

from meshtensor.tilelang.gemm import ALGORITHMS, run_gemm  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    torch.set_num_threads(1)
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    base = 2 * n ** 3 / median(times) / 1e9
    print(f"{n}x{n}x{n} float32, 1 thread")
    print(f"{'kernel':10s} {'GFLOP/s':>8s} {'x torch.mm':>10s} {'max err':>9s}")
    print(f"{'torch.mm':10s} {base:8.1f} {1.0:10.2f} {'':>9s}")
    for alg in ALGORITHMS:
        r = run_gemm(alg, n, n, n, repeat=5)
        print(f"{alg:10s} {r.gflops:8.1f} {r.gflops / base:10.2f} {r.max_abs_error:9.1e}")


if __name__ == "__main__":
    main()
