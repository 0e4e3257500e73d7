"""Mesh GEMMs on a 4x4 mesh vs torch.mm, 1024x1024x1024 float32 on CPU, one run.

    python benchmarks/bench_gemm.py [size] [algorithm ...] [--quick]

Baseline: ``torch.mm`` with the same thread count as the kernels (the C backend runs
the 16 programs on one thread, so ``torch.set_num_threads(1)``), measured in the same
run: every kernel and the baseline are timed in interleaved rounds (``--rounds``,
default 11) and compared by medians, so a busy neighbour slows both sides alike. Kernels compile with ``CPU_FLAGS`` (-O3 -march=native). Prints GFLOP/s, the ratio
to torch.mm, and for each distributed-memory kernel (``*_comm``) the ratio to its
global-view twin (``summa_comm`` / ``summa``, ``cannon_comm`` / ``cannon``). Aim: the
comm kernels >= 0.6x torch.mm at 1024^3. ``--quick`` runs every kernel once at 64^3 (a
test runs it, so a broken benchmark fails the suite); its numbers are not measurements.
"""
import argparse
import os
import sys
import time
from functools import partial
from statistics import median

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402

from meshtensor.tilelang.kernels.gemm import ALGORITHMS, COMM_ALGORITHMS, run_gemm  # noqa: E402

TWIN = {"summa_comm": "summa", "cannon_comm": "cannon"}


def main() -> None:
    ap = argparse.ArgumentParser(description="Mesh GEMMs on a 4x4 mesh vs torch.mm")
    ap.add_argument("size", nargs="?", type=int, default=1024, help="M = N = K (default 1024)")
    ap.add_argument("algorithm", nargs="*", help=f"kernels to run (default: all of "
                    f"{', '.join(ALGORITHMS + COMM_ALGORITHMS)})")
    ap.add_argument("--rounds", type=int, default=11, help="interleaved timing rounds")
    ap.add_argument("--quick", action="store_true",
                    help="size 64, one round: checks that it runs")
    args = ap.parse_args()
    if args.quick:
        args.size, args.rounds = 64, 1
    if args.rounds < 1:
        ap.error(f"argument --rounds: must be >= 1, got {args.rounds}")
    if args.size < 1:
        ap.error(f"argument size: must be >= 1, got {args.size}")
    unknown = [a for a in args.algorithm if a not in ALGORITHMS + COMM_ALGORITHMS]
    if unknown:
        ap.error(f"argument algorithm: unknown {unknown}; choose from "
                 f"{', '.join(ALGORITHMS + COMM_ALGORITHMS)}")
    n, algs = args.size, args.algorithm or list(ALGORITHMS + COMM_ALGORITHMS)
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    runs = {"torch.mm": lambda: torch.mm(a, b)}
    checked = {}
    for alg in algs:  # compile, run once, check against NumPy
        r = run_gemm(alg, n, n, n, repeat=1)
        checked[alg] = r
        ta, tb = torch.randn(n, n), torch.randn(n, n)
        tc = torch.zeros(n, n)
        runs[alg] = partial(r.kernel, ta, tb, tc)
    # Interleaved rounds, medians: the machine may be shared, and every kernel and the
    # baseline then see the same conditions.
    times: dict[str, list[float]] = {k: [] for k in runs}
    for fn in runs.values():
        fn()
    for _ in range(args.rounds):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    gf = {k: 2 * n ** 3 / median(v) / 1e9 for k, v in times.items()}
    base = gf["torch.mm"]
    print(f"{n}x{n}x{n} float32, 1 thread, medians of {args.rounds} interleaved rounds")
    print(f"{'kernel':12s} {'GFLOP/s':>8s} {'x torch.mm':>10s} {'x global view':>13s} "
          f"{'max err':>9s}")
    print(f"{'torch.mm':12s} {base:8.1f} {1.0:10.2f} {'':>13s} {'':>9s}")
    for alg in algs:
        twin = TWIN.get(alg)
        vs = f"{gf[alg] / gf[twin]:13.2f}" if twin in gf else f"{'':>13s}"
        print(f"{alg:12s} {gf[alg]:8.1f} {gf[alg] / base:10.2f} {vs} "
              f"{checked[alg].max_abs_error:9.1e}")
    worst = min(gf[a] for a in ("summa_comm", "cannon_comm") if a in gf) if \
        any(a in gf for a in ("summa_comm", "cannon_comm")) else None
    if worst is not None:
        print(f"comm SUMMA/Cannon: at least {worst / base:.2f}x torch.mm (goal >= 0.6x)")


if __name__ == "__main__":
    main()
