"""``meshtensor`` on the command line.

    meshtensor demo                     # SUMMA GEMM on a 4x4 mesh, on CPU
    meshtensor show --mesh 4x4 --shape 8x12 --sharding '{"x": 0, "y": 1}'
    meshtensor plan --mesh 2x3 --shape 6x6 --from "[[0],[1]]" --to "[[1],[0]]"

Sharding specs are parsed with ``ast.literal_eval`` (never ``eval``): the ``split_axes``
form (``[[0], [1]]``, ``[["x"], []]``) or the seed dict form (``{"x": 0, "y": None}``).
"""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Sequence

import numpy as np

from .mesh import Mesh
from .sharding import Sharding


def parse_shape(text: str) -> tuple[int, ...]:
    """``"8x12"`` -> ``(8, 12)``; ``""`` or ``"scalar"`` -> ``()``."""
    if text.strip() in ("", "scalar"):
        return ()
    parts = text.lower().replace(",", "x").split("x")
    if not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--shape: expected sizes like '8x12', got {text!r}")
    return tuple(int(p) for p in parts)


def parse_sharding(mesh: Mesh, text: str, *, partial: str | None = None,
                   halo: str | None = None, offsets: str | None = None) -> Sharding:
    """A Sharding from CLI text; ``partial`` is ``"axis:kind[,axis:kind]"`` and ``halo`` /
    ``offsets`` comma-separated ints (MLIR's flattened formats)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"sharding {text!r} is not a literal like [[0], [1]] or "
                         f'{{"x": 0, "y": 1}}') from None
    kw = {}
    if partial:
        kw["partial"] = {}
        for item in partial.split(","):
            axis, _, kind = item.partition(":")
            kw["partial"][int(axis) if axis.strip().isdigit() else axis.strip()] = kind.strip() or "sum"
    if halo:
        kw["halo_sizes"] = [int(v) for v in halo.split(",")]
    if offsets:
        kw["sharded_dims_offsets"] = [int(v) for v in offsets.split(",")]
    if isinstance(value, dict):
        base = Sharding.from_seed(mesh, value)
        return base.replace(**{k: v for k, v in kw.items()}) if kw else base
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"sharding {text!r} must be a list of lists or a dict")
    return Sharding(mesh, value, **kw)


def _cmd_plan(args: argparse.Namespace) -> int:
    from .resharding import plan_reshard
    mesh = Mesh.parse(args.mesh)
    shape = parse_shape(args.shape)
    src = parse_sharding(mesh, args.src, partial=args.from_partial, halo=args.from_halo,
                         offsets=args.from_offsets)
    tgt = parse_sharding(mesh, args.tgt, halo=args.to_halo, offsets=args.to_offsets)
    plan = plan_reshard(src, tgt, shape, np.dtype(args.dtype).itemsize)
    print(plan.explain(max_pairs=args.pairs))
    if args.matrix or args.png:
        from .visualize import save_plan_png, visualize_plan
        if args.matrix:
            print(visualize_plan(plan))
        if args.png:
            save_plan_png(plan, args.png)
            print(f"saved {args.png}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from .visualize import save_png, visualize
    mesh = Mesh.parse(args.mesh)
    shape = parse_shape(args.shape)
    s = parse_sharding(mesh, args.sharding, partial=args.partial, halo=args.halo,
                       offsets=args.offsets)
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) if args.values else None
    print(visualize(s, shape, values=values, max_width=args.width))
    if args.png:
        save_png(s, shape, args.png)
        print(f"saved {args.png}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .tilelang.demo import main as demo  # imports tilelang only for this command
    return demo(size=args.size, target=args.target, algorithm=args.algorithm,
                repeat=args.repeat)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="meshtensor", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="plan a reshard and print its steps and costs")
    plan.add_argument("--mesh", required=True, help="mesh sizes like 2x3, or a target (a4e)")
    plan.add_argument("--shape", required=True, help="global tensor shape like 6x6")
    plan.add_argument("--from", dest="src", required=True, help="source sharding")
    plan.add_argument("--to", dest="tgt", required=True, help="target sharding")
    plan.add_argument("--from-partial", help="partial axes of the source, e.g. y:sum")
    plan.add_argument("--from-halo", help="source halo_sizes, e.g. 1,1")
    plan.add_argument("--to-halo", help="target halo_sizes, e.g. 1,1")
    plan.add_argument("--from-offsets", help="source sharded_dims_offsets")
    plan.add_argument("--to-offsets", help="target sharded_dims_offsets")
    plan.add_argument("--dtype", default="float32", help="element type (default float32)")
    plan.add_argument("--pairs", type=int, default=12, help="device pairs listed per step")
    plan.add_argument("--matrix", action="store_true", help="also print sender x receiver bytes")
    plan.add_argument("--png", help="save the plan's byte matrices as a PNG (needs matplotlib)")
    plan.set_defaults(func=_cmd_plan)
    show = sub.add_parser("show", help="draw which part of a tensor sits on which device")
    show.add_argument("--mesh", required=True, help="mesh sizes like 4x4, or a target (a4e)")
    show.add_argument("--shape", required=True, help="global tensor shape like 8x12")
    show.add_argument("--sharding", required=True,
                      help='split_axes form "[[0],[1]]" or seed form \'{"x": 0, "y": 1}\'')
    show.add_argument("--partial", help="partial axes, e.g. y:sum")
    show.add_argument("--halo", help="halo_sizes, e.g. 1,1")
    show.add_argument("--offsets", help="sharded_dims_offsets")
    show.add_argument("--values", action="store_true",
                      help="print local values of arange(size) instead of regions")
    show.add_argument("--width", type=int, default=120, help="maximum width (default 120)")
    show.add_argument("--png", help="also save a picture (needs matplotlib)")
    show.set_defaults(func=_cmd_show)
    demo = sub.add_parser("demo", help="SUMMA GEMM on a 4x4 mesh: compile, run, explain")
    demo.add_argument("--size", type=int, default=512, help="M = N = K (default 512)")
    demo.add_argument("--target", default="c", choices=["c", "cuda"],
                      help="c: CPU through TileLang's C backend (default); cuda: a GPU")
    demo.add_argument("--algorithm", default="summa", choices=["summa", "cannon", "local"])
    demo.add_argument("--repeat", type=int, default=3, help="timed runs (median)")
    demo.set_defaults(func=_cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``meshtensor`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, ImportError) as e:
        print(f"meshtensor {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
