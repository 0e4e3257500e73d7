"""The GEMM choice table of docs/perf.md: for square sizes on square meshes of one
machine, each distributed-memory GEMM in its fastest form whose buffers fit (the tile
search of compare_gemm_algorithms), the fastest and its margin over the runner-up.
Nothing is compiled or timed: the numbers are the model's (the kernels' structure by
formula, equal to estimate_mesh_kernel on the built kernels).

    python benchmarks/perf_table.py [--machine generic] [--dtype float32]
        [--sizes 256,...,8192] [--meshes 2,4,6,8] [--update docs/perf.md] [--quick]

``--update FILE`` rewrites the table between the markers ``<!-- perf-table:NAME:begin
-->`` and ``<!-- perf-table:NAME:end -->`` in FILE (NAME: the machine and dtype, e.g.
``generic-float32``) instead of printing it. ``--quick`` estimates two sizes on two
meshes (the test suite runs it).
"""
import argparse
import pathlib
import re
import time

import tilelang  # noqa: F401  (before tvm)

from meshtensor.machines import get_machine
from meshtensor.tilelang.kernels.gemm_choice import COMPARED, compare_gemm_algorithms

SIZES = (256, 512, 1024, 2048, 4096, 8192)
MESHES = (2, 4, 6, 8)
SHORT = {"summa_comm": "SUMMA", "cannon_comm": "Cannon", "splitk_comm": "split-K",
         "cannon25d_comm": "2.5D", "ksplit_comm": "K-split"}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def table_rows(machine: str, sizes=SIZES, meshes=MESHES, dtype="float32") -> list[str]:
    """One markdown row per (size, mesh): each algorithm's time in ms in its fastest
    form that fits (``too big``: none fits; ``-``: the shape does not suit it), the
    fastest with its tiles, and its margin over the runner-up."""
    m = get_machine(machine)
    rows = []
    for s in sizes:
        for n in meshes:
            if not m.fits((n, n)):
                continue
            c = compare_gemm_algorithms(s, mesh=n, machine=m, dtype=dtype)
            cell = {x.algorithm: _ms(x.total) for x in c.ranked}
            cell.update({x.algorithm: "too big" for x in c.too_big})
            if c.fastest is None:
                best, gap = "none fits", "-"
            else:
                label = c.best.shape_label
                best = SHORT[c.fastest] + ("" if label == "-" else f" {label}")
                gap = "-" if c.runner_up is None else \
                    f"{100 * c.margin:.1f}% ({SHORT[c.runner_up]})"
            rows.append(f"| {s} | {n}x{n} | " + " | ".join(cell.get(a, "-") for a in COMPARED)
                        + f" | {best} | {gap} |")
    return rows


def table(machine: str, sizes=SIZES, meshes=MESHES, dtype="float32") -> str:
    head = ["| n | mesh | " + " | ".join(f"{SHORT[a]} ms" for a in COMPARED)
            + " | fastest (tiles) | margin (runner-up) |",
            "|---:|---|" + "---:|" * len(COMPARED) + "---|---|"]
    return "\n".join(head + table_rows(machine, sizes, meshes, dtype))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="generic", help="preset or machine file")
    ap.add_argument("--dtype", default="float32", help="element type (default float32)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--meshes", default=",".join(map(str, MESHES)))
    ap.add_argument("--update", help="markdown file whose marked table to rewrite")
    ap.add_argument("--quick", action="store_true", help="sizes 256,512 on meshes 2,4")
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
    if args.quick:
        sizes, meshes = [256, 512], [2, 4]
    if min(sizes + meshes) < 1:
        ap.error("--sizes and --meshes must be >= 1")
    t0 = time.perf_counter()
    text = table(args.machine, sizes, meshes, args.dtype)
    took = time.perf_counter() - t0
    if not args.update:
        print(text)
        print(f"\n({len(sizes) * len(meshes)} comparisons in {took:.1f} s)")
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
