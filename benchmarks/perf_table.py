"""The GEMM choice table of docs/perf.md: the performance model's estimate of SUMMA,
Cannon and K-split (the distributed-memory kernels) for square sizes on square meshes
of one machine, the fastest and its margin. Nothing is compiled or timed: the numbers
are the model's (estimate_mesh_kernel reads the kernels' TIR).

    python benchmarks/perf_table.py [--machine generic] [--dtype float32]
        [--sizes 256,...,8192] [--meshes 2,4,6,8] [--update docs/perf.md] [--quick]

``--update FILE`` rewrites the table between the markers ``<!-- perf-table:NAME:begin
-->`` and ``<!-- perf-table:NAME:end -->`` in FILE (NAME: the machine and dtype, e.g.
``generic-float32``) instead of printing it. ``--quick`` estimates one size on one mesh
(a test runs it, so a broken benchmark fails the suite).
"""
import argparse
import pathlib
import re
import time

import tilelang  # noqa: F401  (before tvm)

from meshtensor.machines import get_machine
from meshtensor.tilelang.kernels.gemm_choice import compare_gemm_algorithms

SIZES = (256, 512, 1024, 2048, 4096, 8192)
MESHES = (2, 4, 6, 8)
SHORT = {"summa_comm": "SUMMA", "cannon_comm": "Cannon", "ksplit_comm": "K-split"}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def table_rows(machine: str, sizes=SIZES, meshes=MESHES, dtype="float32") -> list[str]:
    """One markdown row per (size, mesh): the three times in ms, the fastest, its margin
    over the runner-up, and whether the fastest kernel's per-core buffers fit."""
    m = get_machine(machine)
    rows = []
    for s in sizes:
        for n in meshes:
            c = compare_gemm_algorithms(s, mesh=n, machine=m, dtype=dtype)
            t = {a: r.total for a, r in c.estimates}
            fits = dict(c.estimates)[c.fastest].fits_local_memory
            best = SHORT[c.fastest]
            if c.margin == 0:  # a tie: name both, no margin
                best, gap = f"{best} = {SHORT[c.runner_up]}", "-"
            else:
                gap = f"{100 * c.margin:.1f}% ({SHORT[c.runner_up]})"
            rows.append(f"| {s} | {n}x{n} | {_ms(t['summa_comm'])} | {_ms(t['cannon_comm'])} "
                        f"| {_ms(t['ksplit_comm'])} | {best} | {gap} | "
                        f"{'yes' if fits else 'no'} |")
    return rows


def table(machine: str, sizes=SIZES, meshes=MESHES, dtype="float32") -> str:
    head = ["| n | mesh | SUMMA ms | Cannon ms | K-split ms | fastest | margin (runner-up) "
            "| fits local memory |",
            "|---:|---|---:|---:|---:|---|---|---|"]
    return "\n".join(head + table_rows(machine, sizes, meshes, dtype))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="generic", help="preset or machine file")
    ap.add_argument("--dtype", default="float32", help="element type (default float32)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--meshes", default=",".join(map(str, MESHES)))
    ap.add_argument("--update", help="markdown file whose marked table to rewrite")
    ap.add_argument("--quick", action="store_true",
                    help="size 256 on a 2x2 mesh only: checks that it runs")
    args = ap.parse_args()
    if args.quick:
        if args.update:
            ap.error("--quick prints a small table; it cannot --update a document")
        args.sizes, args.meshes = "256", "2"
    try:
        sizes = [int(x) for x in args.sizes.split(",")]
        meshes = [int(x) for x in args.meshes.split(",")]
    except ValueError:
        ap.error(f"--sizes and --meshes take comma-separated ints, got {args.sizes!r}, "
                 f"{args.meshes!r}")
    if min(sizes + meshes) < 1:
        ap.error("--sizes and --meshes must be >= 1")
    t0 = time.perf_counter()
    text = table(args.machine, sizes, meshes, args.dtype)
    took = time.perf_counter() - t0
    if not args.update:
        print(text)
        print(f"\n({len(sizes) * len(meshes) * 3} estimates in {took:.1f} s)")
        return
    p = pathlib.Path(args.update)
    doc = p.read_text()
    name = f"{get_machine(args.machine).name}-{args.dtype}"
    BEGIN, END = f"<!-- perf-table:{name}:begin -->", f"<!-- perf-table:{name}:end -->"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(doc):
        ap.error(f"{p} has no {BEGIN} ... {END} block")
    p.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", doc))
    print(f"updated {p} ({took:.1f} s)")


if __name__ == "__main__":
    main()
