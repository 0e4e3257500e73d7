"""Speed of the NumPy simulator on a 64 MiB float32 tensor over a 4x4 mesh.

Baseline: one ``numpy.copy`` of the same 64 MiB, measured in the same run. Each line
prints the median time and the ratio to that copy (aim: <= 3x).

    python benchmarks/bench_core.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import timeit  # noqa: E402

import meshtensor as mt  # noqa: E402
from meshtensor import collectives as C  # noqa: E402


def main() -> None:
    mesh = mt.Mesh.from_target("a4e")
    x = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)  # 64 MiB
    s = mt.Sharding(mesh, [["x"], ["y"]])
    a = mt.distribute(x, s)
    base = timeit(lambda: np.copy(x))
    cases = {
        "distribute  S(x)S(y)": lambda: mt.distribute(x, s),
        "to_global   S(x)S(y)": a.to_global,
        "all_gather  over y, dim 1": lambda: C.all_gather(a, ["y"], 1),
        "all_to_all  over y, split 0 concat 1": lambda: C.all_to_all(a, ["y"], 0, 1),
        "distribute  replicated": lambda: mt.distribute(x, mt.Sharding.replicated(mesh)),
    }
    print(f"baseline numpy.copy of {x.nbytes / 2**20:.0f} MiB: {base * 1e3:.1f} ms")
    print(f"{'case':40s} {'ms':>8s} {'x copy':>8s}")
    for name, fn in cases.items():
        t = timeit(fn)
        print(f"{name:40s} {t * 1e3:8.1f} {t / base:8.2f}")


if __name__ == "__main__":
    main()
