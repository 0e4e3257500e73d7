"""Speed of the NumPy simulator on a 64 MiB float32 tensor over a 4x4 mesh.

Baseline: one ``numpy.copy`` of the same 64 MiB, measured in the same run. The cases
and the baseline are timed in interleaved rounds and each line prints the median over
rounds of ``case time / copy time in that round`` (robust when the machine is shared),
plus the best time. Aims: <= 3x for every case; ``all_to_all`` and ``update_halo``
(which moves only the halo cells) <= 1.5x.

    python benchmarks/bench_core.py [--rounds 9] [--quick]

``--quick`` runs every case once on 4 MiB (a test runs it, so a broken benchmark fails
the suite); its numbers are not measurements.
"""
from __future__ import annotations

import argparse
import time
from statistics import median

import numpy as np

import meshtensor as mt
from meshtensor import collectives as C


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--quick", action="store_true",
                    help="one round on 4 MiB: checks that the benchmark runs")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"argument --rounds: must be >= 1, got {args.rounds}")
    side = 1024 if args.quick else 4096
    if args.quick:
        args.rounds = 1
    mesh = mt.Mesh.from_target("a4e")
    x = np.random.default_rng(0).standard_normal((side, side), dtype=np.float32)  # 64 MiB
    s = mt.Sharding(mesh, [["x"], ["y"]])
    a = mt.distribute(x, s)
    sh = s.replace(halo_sizes=[1, 1, 1, 1])
    ah = mt.distribute(x, sh)
    cases = {
        "numpy.copy (baseline)": lambda: np.copy(x),
        "distribute  S(x)S(y)": lambda: mt.distribute(x, s),
        "to_global   S(x)S(y)": a.to_global,
        "all_gather  over y, dim 1": lambda: C.all_gather(a, ["y"], 1),
        "all_to_all  over y, split 0 concat 1": lambda: C.all_to_all(a, ["y"], 0, 1),
        "update_halo S(x)S(y), 1-cell halos": lambda: C.update_halo(ah, sh),
        "distribute  replicated": lambda: mt.distribute(x, mt.Sharding.replicated(mesh)),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():
        fn()  # warm up
    for _ in range(args.rounds):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    base = times["numpy.copy (baseline)"]
    print(f"baseline numpy.copy of {x.nbytes / 2**20:.0f} MiB: best {min(base) * 1e3:.1f} ms, "
          f"{args.rounds} interleaved rounds")
    print(f"{'case':40s} {'best ms':>8s} {'x copy':>8s}")
    for name, ts in times.items():
        ratio = median(t / b for t, b in zip(ts, base))
        print(f"{name:40s} {min(ts) * 1e3:8.1f} {ratio:8.2f}")


if __name__ == "__main__":
    main()
