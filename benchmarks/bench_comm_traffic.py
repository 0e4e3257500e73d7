"""NoC traffic of the mesh GEMMs: bytes between cores, link loads under XY routing and
the estimated NoC time, from the kernels' TIR (no compilation, nothing timed).

    python benchmarks/bench_comm_traffic.py [--size 1024] [--mesh 4] [--quick]

``--quick`` analyses 128^3 (a test runs it, so a broken benchmark fails the suite).

Baseline: the global-view SUMMA (cores read other cores' shards of A and B directly),
analysed in the same run; the ratio columns divide by its numbers. The NoC time is the
alpha-beta estimate of ``CommReport.noc_time`` with the default parameters (assumed
32 GB/s per directed link and 1 ns per hop, not measurements). A second table lists
Cannon's supersteps: after the skew, every rotation moves n(n-1) tiles one hop and
the n wraparound tiles n-1 hops (no wraparound links), so every directed link along
the rotation axis carries exactly one tile.
"""
import argparse

import numpy as np

import tilelang  # noqa: F401  (before tvm)

from meshtensor.tilelang.kernels.gemm import ALGORITHMS, COMM_ALGORITHMS, build_gemm
from meshtensor.tilelang import analyze_mesh_communication, verify_mesh_tensors
from meshtensor.tilelang.analysis.traffic import DEFAULT_HOP_LATENCY, DEFAULT_LINK_BANDWIDTH

BASELINE = "summa"
ORDER = ("summa", "cannon", "summa_comm", "cannon_comm", "ksplit_comm", "splitk_comm",
         "cannon25d_comm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="M = N = K (default 1024)")
    ap.add_argument("--mesh", type=int, default=4, help="n for an n x n mesh (default 4)")
    ap.add_argument("--quick", action="store_true", help="256^3 (the test suite runs it)")
    args = ap.parse_args()
    if args.quick:
        args.size = 256
    if args.size < 1 or args.mesh < 1:
        ap.error(f"--size and --mesh must be >= 1, got {args.size} and {args.mesh}")
    n, s = args.mesh, args.size
    algs = [a for a in ORDER if a in ALGORITHMS + COMM_ALGORITHMS]
    built = {}
    for a in algs:
        try:
            built[a] = build_gemm(a, s, s, s, mesh=n)
        except ValueError as err:  # split-K and 2.5D need shapes the mesh divides
            print(f"({a} skipped: {err})")
    algs = list(built)
    reports = {a: analyze_mesh_communication(built[a]) for a in algs}
    base = reports[BASELINE]
    b_bytes, b_time = base.remote_bytes, base.noc_time()
    print(f"{s}x{s}x{s} float32 on a {n}x{n} mesh; NoC model: "
          f"{DEFAULT_LINK_BANDWIDTH / 1e9:g} GB/s per directed link, "
          f"{DEFAULT_HOP_LATENCY * 1e9:g} ns per hop (assumptions); baseline: "
          f"global-view {BASELINE}")
    head = (f"{'algorithm':15s} {'owner':>5s} {'remote B':>11s} {'x base':>6s} {'steps':>5s} "
            f"{'max link/step':>13s} {'max link total':>14s} {'link-bytes':>12s} "
            f"{'NoC us':>9s} {'x base':>6s}")
    print(head)
    for a in algs:  # (split-K, 2.5D: some tensors carry no sharding to be owner of)
        r = reports[a]
        owner = "yes" if not verify_mesh_tensors(built[a], owner_only=True) else "no"
        per_step = max((st.max_link_bytes for st in r.supersteps), default=0)
        t = r.noc_time()
        print(f"{a:15s} {owner:>5s} {r.remote_bytes:>11d} {r.remote_bytes / b_bytes:>6.2f} "
              f"{len(r.supersteps):>5d} {per_step:>13d} {r.max_link_bytes():>14d} "
              f"{int(r.link_loads().sum()):>12d} {t * 1e6:>9.2f} {t / b_time:>6.2f}")
    if "cannon_comm" in reports:
        print("\ncannon_comm supersteps (bytes by XY-route length; transfers; busiest link)")
        print(reports["cannon_comm"].superstep_table())
        tile = 4 * -(-s // n) * -(-s // n)
        for st in reports["cannon_comm"].supersteps:
            if "shift" not in st.statement:
                continue
            axis = 1 if "('y',)" in st.statement else 0
            inner = np.take(st.link_loads[axis], range(n - 1), axis=1 + axis)  # real links
            counts = {h: b // tile for h, b in st.hop_bytes.items()}
            print(f"{st.statement} #{st.execution}: transfers by hops {counts}; every directed "
                  f"{'xy'[axis]} link carries {inner.min()} to {inner.max()} bytes "
                  f"({inner.max() / tile:g} tile)")


if __name__ == "__main__":
    main()
