"""SpmdizeMeshCopies costs little: spmdize + compile of the global-view 4x4 SUMMA against
compiling the hand-written comm SUMMA (``summa_comm``), and the pass alone.

    python benchmarks/bench_spmdize.py [size] [--quick]      # default 512

Baseline: ``compile_mesh_kernel(build_gemm("summa_comm", ...))``, measured in the same
run with TileLang's kernel cache disabled (every compile really runs gcc). Target: the
ratio stays within 1.5. Also prints the pass's own time for SUMMA and Cannon, and the
CPU time of one run of each compiled kernel. ``--quick`` does each step once at 64^3
with TileLang's cache on, and does not check the target (a test runs it, so a broken benchmark fails the suite).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import timeit  # noqa: E402

import numpy as np  # noqa: E402
import tilelang  # noqa: E402

from meshtensor.tilelang.kernels.gemm import build_gemm  # noqa: E402
from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.logs import quiet_tilelang  # noqa: E402
from meshtensor.tilelang.transform.spmdize import spmdize  # noqa: E402


def main(size: int = 512, quick: bool = False) -> None:
    n = size
    once = {"repeat": 1, "warmup": 0} if quick else {}
    print(f"4x4 mesh, C = A @ B, {n}x{n}x{n} float32, TileLang C backend, cache disabled")
    if not quick:  # --quick only checks the benchmark runs: cached compiles will do
        tilelang.disable_cache()
    for alg in ("summa", "cannon"):
        f = build_gemm(alg, n, n, n)
        t = timeit(lambda: spmdize(f), **(once or {"repeat": 5}))
        print(f"spmdize({alg}) alone: {t * 1e3:7.1f} ms")
    with quiet_tilelang():
        t_hand = timeit(lambda: compile_mesh_kernel(build_gemm("summa_comm", n, n, n)),
                        **(once or {"repeat": 3, "warmup": 0}))
        t_pass = timeit(lambda: compile_mesh_kernel(spmdize(build_gemm("summa", n, n, n))),
                        **(once or {"repeat": 3, "warmup": 0}))
    ratio = t_pass / t_hand
    print(f"build + compile: summa_comm (hand-written) {t_hand:6.2f} s   "
          f"spmdize(summa) {t_pass:6.2f} s   ratio {ratio:.2f} (target <= 1.5)")
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    with quiet_tilelang():
        kernels = {"summa_comm": compile_mesh_kernel(build_gemm("summa_comm", n, n, n)),
                   "spmdize(summa)": compile_mesh_kernel(spmdize(build_gemm("summa", n, n, n)))}
    times = {}
    for name, k in kernels.items():
        c = torch.zeros((n, n))
        times[name] = timeit(lambda: k(a, b, c), **(once or {"repeat": 5}))
    base = times["summa_comm"]
    for name, t in times.items():
        print(f"run {name:>15s}: {t * 1e3:8.2f} ms  ({2 * n ** 3 / t / 1e9:6.2f} GFLOP/s, "
              f"ratio {t / base:.2f} vs summa_comm)")
    if ratio > 1.5 and not quick:
        raise SystemExit(f"spmdize + compile is {ratio:.2f}x the hand-written kernel's compile")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", nargs="?", type=int, default=512, help="M = N = K (default 512)")
    ap.add_argument("--quick", action="store_true", help="64^3, each step once")
    args = ap.parse_args()
    if args.size < 1:
        ap.error(f"argument size: must be >= 1, got {args.size}")
    main(64 if args.quick else args.size, args.quick)
