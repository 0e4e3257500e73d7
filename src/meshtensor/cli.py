"""The ``meshtensor`` command: draw layouts, plan reshards, run the GEMM demo.

    meshtensor show --mesh 4x4 --shape 8x12 --sharding '{"x": 0, "y": 1}'
    meshtensor plan --mesh 2x3 --shape 6x6 --from "[[0],[1]]" --to "[[1],[0]]"
    meshtensor demo                     # SUMMA GEMM on a 4x4 mesh, on CPU

Sharding specs are parsed with ``ast.literal_eval`` (never ``eval``): the ``split_axes``
form (``[[0], [1]]``, ``[["x"], []]``) or the seed dict form (``{"x": 0, "y": None}``).
Every argument is checked before anything is printed; a bad one exits with status 2
and a one-line ``meshtensor CMD: error: ...`` message. Output and help fit 80 columns,
or the terminal's width when stdout is a terminal (``--width`` sets it).
"""

from __future__ import annotations

import argparse
import ast
import functools
import glob
import importlib.util
import os
import pathlib
import re
import shutil
import sys
from typing import Any, Callable, Sequence

import numpy as np

from . import __version__
from .mesh import Mesh
from .sharding import Sharding
from .text import DEFAULT_WIDTH, MIN_WIDTH

DESCRIPTION = """\
meshtensor: distributed tensors over a mesh of cores or devices. Run
'meshtensor COMMAND --help' for the options of each command."""

EPILOG = """\
examples:
  meshtensor show --mesh 4x4 --shape 8x12 --sharding '{"x": 0, "y": 1}'
  meshtensor plan --mesh 2x3 --shape 6x6 --from '[[0],[1]]' --to '[[1],[0]]'
  meshtensor demo --size 256

sharding specs: the split_axes form '[[0],[1]]' / '[["x"],[]]' (dim d is
split by the listed mesh axes) or the seed form '{"x": 0, "y": None}' (mesh
axis -> tensor dim). Output fits 80 columns, or the terminal's width."""

# The algorithms of `demo`, per mode (the help and the check read these).
DEMO_ALGORITHMS = ("summa_comm", "cannon_comm", "ksplit_comm", "summa", "cannon", "local")
SPMDIZE_ALGORITHMS = ("summa", "cannon")  # global-view kernels that spmdize rewrites

PER_DIM_HELP = ("comma-separated ints, flat as in MLIR (e.g. {flat}) or one list per split "
                "dim (e.g. '{nested}')")
# --values materialises the whole tensor (int64): 2**24 elements = 128 MiB.
MAX_VALUES = 2 ** 24
# JSON words a spec may hold by mistake, and the Python literal meant.
JSON_WORDS = {"null": "None", "true": "True", "false": "False"}
# Element types numpy lacks, by size in bytes (the planner only needs the size).
EXTRA_ITEMSIZES = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}


def output_width() -> int:
    """Columns for text output: 80, or the terminal's width (at least ``MIN_WIDTH``)
    when stdout is a terminal."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdout
        tty = False
    if not tty:
        return DEFAULT_WIDTH
    return max(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, MIN_WIDTH)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (usage is in ``--help``) and whose
    help fits :func:`output_width`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = kwargs.pop("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = functools.partial(cls, width=output_width())
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type`` for integers >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def dtype_itemsize(text: str) -> int:
    """Bytes per element of a numeric element type: a numpy name (``"float32"``,
    ``"int8"``) or one numpy lacks (``"bfloat16"`` = 2).

    >>> dtype_itemsize("bfloat16"), dtype_itemsize("float64")
    (2, 8)
    """
    name = text.strip()
    if name in EXTRA_ITEMSIZES:
        return EXTRA_ITEMSIZES[name]
    try:
        dt = np.dtype(name)
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biufc":
        numeric = sorted({np.dtype(c).name for c in np.typecodes["All"]
                          if np.dtype(c).kind in "biufc"} | set(EXTRA_ITEMSIZES))
        raise argparse.ArgumentTypeError(f"unknown element type {text!r}; accepted: "
                                         f"{', '.join(numeric)}")
    return dt.itemsize


def parse_shape(text: str) -> tuple[int, ...]:
    """``"8x12"`` -> ``(8, 12)``; ``""`` or ``"scalar"`` -> ``()``."""
    if text.strip() in ("", "scalar"):
        return ()
    parts = text.lower().replace(",", "x").split("x")
    if not all(p.strip().isdigit() for p in parts):
        if all(re.fullmatch(r"\s*-?\d+\s*", p) for p in parts):
            raise ValueError(f"--shape: sizes must be >= 0, got {text!r}")
        raise ValueError(f"--shape: expected sizes like '8x12', got {text!r}")
    return tuple(int(p) for p in parts)


def parse_mesh(text: str) -> Mesh:
    """``--mesh``: sizes like ``"4x4"`` or a target name (``"a4e"``).

    >>> parse_mesh("2x3").shape
    (2, 3)
    """
    if re.fullmatch(r"\s*-?\d+(\s*x\s*-?\d+)*\s*", text.lower()) and "-" in text:
        raise ValueError(f"--mesh: mesh sizes must be >= 1, got {text!r}")
    return Mesh.parse(text)


def parse_per_dim(text: str, base: Sharding, what: str,
                  per_dim: Callable[[int], int]) -> list[int]:
    """MLIR's flattened per-split-dim ints from ``"0,3,6"``, ``"[0, 3, 6]"`` or the
    per-dim form ``"[[0, 3, 6], [0, 2, 6]]"``; ``per_dim(d)`` values for each split dim
    ``d`` of ``base`` (checked for the nested form; the flat form is checked by
    ``Sharding``).

    >>> s = Sharding(Mesh([2, 3]), [[0], [1]])
    >>> parse_per_dim("[[0, 1, 6], [0, 2, 4, 6]]", s, "--offsets", lambda d: s.shard_count(d) + 1)
    [0, 1, 6, 0, 2, 4, 6]
    """
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if is_int(value):
        return [value]
    if isinstance(value, (list, tuple)) and all(is_int(v) for v in value):
        return list(value)
    if isinstance(value, (list, tuple)) and all(
            isinstance(g, (list, tuple)) and all(is_int(v) for v in g) for g in value):
        dims = base.split_dims
        if len(value) != len(dims):
            raise ValueError(f"{what}: one list per split dim: {base} splits {len(dims)} "
                             f"dims {list(dims)}, got {len(value)} lists")
        for d, g in zip(dims, value):
            if len(g) != per_dim(d):
                raise ValueError(f"{what}: dim {d} needs {per_dim(d)} values, got "
                                 f"{len(g)}: {list(g)}")
        return [v for g in value for v in g]
    raise ValueError(f"{what}: expected comma-separated ints or one list of ints per "
                     f"split dim, got {text!r}")


def parse_sharding(mesh: Mesh, text: str, *, partial: str | None = None,
                   halo: str | None = None, offsets: str | None = None,
                   prefix: str = "--", ndim: int | None = None) -> Sharding:
    """A Sharding from CLI text; ``partial`` is ``"axis:kind[,axis:kind]"``; ``halo`` and
    ``offsets`` are MLIR's flattened ints (``"1,1"``) or one list per split dim
    (``"[[0,2,6],[0,3,6]]"``). ``prefix`` names the flags in messages (``--from-``);
    ``ndim`` (the ``--shape`` rank) checks a seed dict's dims against it."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        json = sorted(set(re.findall(r"\b(null|true|false)\b", text)))
        hint = "; ".join(f"write {JSON_WORDS[w]}, not {w}" for w in json)
        raise ValueError(f"sharding {text!r} is not a literal like [[0], [1]] or "
                         f'{{"x": 0, "y": 1}}' + (f" (Python literals: {hint})" if json else "")
                         ) from None
    if isinstance(value, dict):
        base = Sharding.from_seed(mesh, value, ndim=ndim)
    elif isinstance(value, (list, tuple)):
        base = Sharding(mesh, value)
    else:
        raise ValueError(f"sharding {text!r} must be a list of lists or a dict")
    kw: dict[str, Any] = {}
    if partial:
        kw["partial"] = {}
        for item in partial.split(","):
            axis, _, kind = item.partition(":")
            kw["partial"][int(axis) if axis.strip().isdigit() else axis.strip()] = kind.strip() or "sum"
    if halo:
        kw["halo_sizes"] = parse_per_dim(halo, base, f"{prefix}halo", lambda d: 2)
    if offsets:
        kw["sharded_dims_offsets"] = parse_per_dim(offsets, base, f"{prefix}offsets",
                                                   lambda d: base.shard_count(d) + 1)
    return base.replace(**kw) if kw else base


def prepare_png(path: str) -> pathlib.Path:
    """Check a ``--png`` path before anything is drawn or printed: it ends in ``.png``,
    is not a folder, matplotlib is installed, and the file can be written there (tried
    by opening it). A missing folder is created only where it is the last one (its
    parent exists), so a mistyped path does not grow a tree of folders.

    >>> prepare_png("/nonexistent/dir/x.png")
    Traceback (most recent call last):
    ...
    ValueError: --png: the folder '/nonexistent' does not exist (only the last folder of the path is created)
    """
    p = pathlib.Path(path)
    if p.suffix.lower() != ".png":
        raise ValueError(f"--png: expected a file name ending in .png, got {path!r}")
    if p.is_dir():
        raise ValueError(f"--png: {path!r} is a folder; give a file name like {path}/out.png")
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--png needs matplotlib: pip install 'meshtensor[viz]'")
    folder = p.parent
    made = False
    if not folder.exists():
        if not folder.parent.is_dir():
            missing = folder
            while not missing.parent.exists():
                missing = missing.parent
            raise ValueError(f"--png: the folder {str(missing)!r} does not exist (only the "
                             f"last folder of the path is created)")
        try:
            folder.mkdir()
            made = True
        except OSError as e:
            raise ValueError(f"--png: cannot create the folder {str(folder)!r}: "
                             f"{e.strerror or e}") from None
    elif not folder.is_dir():
        raise ValueError(f"--png: cannot create the folder {str(folder)!r}: "
                         f"{str(folder)!r} is a file")
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
    except OSError as e:
        if made:
            folder.rmdir()
        raise ValueError(f"--png: cannot write {str(p)!r}: {e.strerror or e}") from None
    if not existed:
        p.unlink()  # written for real after the drawing
    return p


def cuda_visible(dev: str = "/dev") -> bool:
    """Whether a CUDA GPU may be visible, answered without importing torch: False when
    ``CUDA_VISIBLE_DEVICES`` hides every device or (on Linux) no ``/dev/nvidia<N>`` and
    no WSL GPU (``/dev/dxg``) exists; True otherwise (torch decides later).

    >>> cuda_visible("/nonexistent") if sys.platform == "linux" else False
    False
    """
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1", "none", "NoDevFiles"):
        return False
    if sys.platform != "linux":
        return True
    return bool(glob.glob(os.path.join(dev, "nvidia[0-9]*")) or
                os.path.exists(os.path.join(dev, "dxg")))


def _cmd_plan(args: argparse.Namespace) -> int:
    from .resharding import plan_reshard
    mesh = parse_mesh(args.mesh)
    shape = parse_shape(args.shape)
    src = parse_sharding(mesh, args.src, partial=args.from_partial, halo=args.from_halo,
                         offsets=args.from_offsets, prefix="--from-", ndim=len(shape))
    tgt = parse_sharding(mesh, args.tgt, halo=args.to_halo, offsets=args.to_offsets,
                         prefix="--to-", ndim=len(shape))
    plan = plan_reshard(src, tgt, shape, args.itemsize)
    png = prepare_png(args.png) if args.png else None
    width = args.width or output_width()
    print(plan.explain(max_pairs=args.pairs, width=width))
    if args.matrix or png:
        from .visualize import save_plan_png, visualize_plan
        if args.matrix:
            print(visualize_plan(plan, width=width))
        if png:
            save_plan_png(plan, str(png))
            print(f"saved {png}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from .visualize import save_png, visualize
    mesh = parse_mesh(args.mesh)
    shape = parse_shape(args.shape)
    s = parse_sharding(mesh, args.sharding, partial=args.partial, halo=args.halo,
                       offsets=args.offsets, ndim=len(shape))
    shape = s.check_shape(shape, "--shape")
    size = int(np.prod(shape, dtype=np.int64))
    if args.values and size > MAX_VALUES:
        raise ValueError(f"--values builds arange({size}) for --shape {args.shape}; "
                         f"at most {MAX_VALUES} elements: use a smaller --shape")
    values = np.arange(size, dtype=np.int64).reshape(shape) if args.values else None
    png = prepare_png(args.png) if args.png else None
    print(visualize(s, shape, values=values, max_width=args.width or output_width()))
    if png:
        save_png(s, shape, str(png))
        print(f"saved {png}")
    return 0


def _demo_algorithm(args: argparse.Namespace) -> str:
    """``--algorithm`` checked against the names of the mode (default: summa_comm, or
    summa with ``--spmdize``)."""
    names = SPMDIZE_ALGORITHMS if args.spmdize else DEMO_ALGORITHMS
    if args.algorithm is None:
        return names[0]
    if args.algorithm not in names:
        mode = ("with --spmdize (which rewrites a global-view kernel), " if args.spmdize
                else "")
        raise ValueError(f"--algorithm: {mode}one of {', '.join(names)}, got "
                         f"{args.algorithm!r}")
    return args.algorithm


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.tdist and (args.tilelang_mesh or args.spmdize or args.algorithm is not None
                       or args.target != "c"):
        raise ValueError("--tdist takes no other mode, --algorithm or --target")
    if args.tilelang_mesh and (args.spmdize or args.algorithm is not None
                               or args.target != "c"):
        raise ValueError("--tilelang-mesh runs the Tilelang-Mesh GEMM on CPU: it takes no "
                         "--spmdize, --algorithm or --target")
    algorithm = _demo_algorithm(args)
    if args.spmdize and args.target != "c":
        raise ValueError(f"--spmdize runs on CPU (--target c), got --target {args.target}")
    if args.target == "cuda" and not cuda_visible():
        raise ValueError("--target cuda needs a CUDA GPU; none is visible (no /dev/nvidia* "
                         "device, or CUDA_VISIBLE_DEVICES hides them)")
    width = args.width or output_width()
    # The demo modules import tilelang and torch: only for this command, after the checks.
    if args.tdist:
        from .tilelang.demos.tdist_demo import main as tdist_demo
        return tdist_demo(size=args.size, repeat=args.repeat, width=width)
    if args.tilelang_mesh:
        from .tilelang.demos.tilelang_mesh_demo import main as tilelang_mesh_demo
        return tilelang_mesh_demo(size=args.size, repeat=args.repeat, width=width)
    if args.spmdize:
        from .tilelang.demos.spmdize_demo import main as spmdize_demo
        return spmdize_demo(size=args.size, algorithm=algorithm, repeat=args.repeat,
                            target=args.target, width=width)
    from .tilelang.demos.gemm_demo import main as demo
    return demo(size=args.size, target=args.target, algorithm=algorithm,
                repeat=args.repeat, width=width)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="meshtensor", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands",
                           parser_class=_Parser)
    positive, non_negative = _int_at_least(1), _int_at_least(0)
    width_help = (f"maximum line width in columns, >= {MIN_WIDTH} (default 80, or the "
                  f"terminal's width when the output is a terminal)")
    png_help = ("save a picture to this .png file (needs matplotlib; a missing last "
                "folder is created)")

    show = sub.add_parser("show", help="draw which part of a tensor each device holds "
                          "(text, or --png)",
                          description="Draw which part of a tensor each device holds.")
    show.add_argument("--mesh", required=True, help="mesh sizes like 4x4, or a target (a4e)")
    show.add_argument("--shape", required=True, help="global tensor shape like 8x12")
    show.add_argument("--sharding", required=True,
                      help='split_axes form "[[0],[1]]" or seed form \'{"x": 0, "y": 1}\'')
    show.add_argument("--partial", help="partial axes, e.g. y:sum")
    show.add_argument("--halo", help="halo_sizes (lo, hi per split dim): " +
                      PER_DIM_HELP.format(flat="1,1,0,2", nested="[[1,1],[0,2]]"))
    show.add_argument("--offsets", help="sharded_dims_offsets (k+1 per split dim): " +
                      PER_DIM_HELP.format(flat="0,2,6", nested="[[0,2,6],[0,3,4,6]]"))
    show.add_argument("--values", action="store_true",
                      help="print local values of arange(size) instead of regions")
    show.add_argument("--width", type=_int_at_least(MIN_WIDTH), help=width_help)
    show.add_argument("--png", help=png_help)
    show.set_defaults(func=_cmd_show)

    plan = sub.add_parser("plan", help="plan a reshard between two shardings: steps, "
                          "bytes moved, cost",
                          description="Plan a reshard between two shardings and print "
                                      "its steps, bytes moved and cost.")
    plan.add_argument("--mesh", required=True, help="mesh sizes like 2x3, or a target (a4e)")
    plan.add_argument("--shape", required=True, help="global tensor shape like 6x6")
    plan.add_argument("--from", dest="src", required=True, help="source sharding")
    plan.add_argument("--to", dest="tgt", required=True, help="target sharding")
    plan.add_argument("--from-partial", help="partial axes of the source, e.g. y:sum")
    plan.add_argument("--from-halo", help="source halo_sizes, like --halo of show")
    plan.add_argument("--to-halo", help="target halo_sizes, like --halo of show")
    plan.add_argument("--from-offsets", help="source sharded_dims_offsets (k+1 per split "
                      "dim): " + PER_DIM_HELP.format(flat="0,2,6",
                                                     nested="[[0,2,6],[0,3,4,6]]"))
    plan.add_argument("--to-offsets", help="target sharded_dims_offsets, like "
                      "--from-offsets")
    plan.add_argument("--dtype", dest="itemsize", type=dtype_itemsize, default="float32",
                      metavar="DTYPE", help="element type: a numpy name or bfloat16 "
                      "(default float32)")
    plan.add_argument("--pairs", type=non_negative, default=12,
                      help="device pairs listed per step (default 12)")
    plan.add_argument("--matrix", action="store_true", help="also print sender x receiver "
                      "bytes (receivers in blocks that fit the width)")
    plan.add_argument("--width", type=_int_at_least(MIN_WIDTH), help=width_help)
    plan.add_argument("--png", help="save the plan's byte matrices as a picture to this "
                      ".png file (needs matplotlib; a missing last folder is created)")
    plan.set_defaults(func=_cmd_plan)

    demo = sub.add_parser("demo", help="compile, check and time a SUMMA GEMM on a 4x4 mesh "
                          "of cores (needs tilelang)",
                          description="Compile a GEMM for a 4x4 mesh of cores with "
                                      "TileLang, check it against NumPy, time it, and "
                                      "print its layout and traffic.")
    demo.add_argument("--size", type=positive, default=512, help="M = N = K (default 512)")
    demo.add_argument("--target", default="c", choices=["c", "cuda"],
                      help="c: CPU through TileLang's C backend (default); cuda: a GPU")
    demo.add_argument("--algorithm", metavar="NAME",
                      help=f"{', '.join(DEMO_ALGORITHMS)}: *_comm kernels exchange tiles "
                           f"through comm ops, the others are global-view kernels (default "
                           f"summa_comm); with --spmdize: {' or '.join(SPMDIZE_ALGORITHMS)} "
                           f"(default {SPMDIZE_ALGORITHMS[0]})")
    demo.add_argument("--repeat", type=positive, default=3,
                      help="timed runs, the median is reported (default 3)")
    demo.add_argument("--spmdize", action="store_true",
                      help="run SpmdizeMeshCopies on the global-view kernel (summa or "
                           "cannon): show the communication chosen per copy, run both "
                           "kernels")
    demo.add_argument("--tilelang-mesh", action="store_true",
                      help="run the GEMM of Tilelang-Mesh's examples (T.comm, "
                           "T.MeshTensor) unchanged and print the traffic the chip "
                           "would carry")
    demo.add_argument("--tdist", action="store_true",
                      help="an all-reduce over 4 chips of 2x2 cores with T.dist (a ring "
                           "of puts and T.dist.all_reduce; --size floats per core), "
                           "checked, with its chip-to-chip traffic and a deadlock report")
    demo.add_argument("--width", type=_int_at_least(MIN_WIDTH), help=width_help)
    demo.set_defaults(func=_cmd_demo)

    from .profile_cli import add_profile_parser  # its own module; tilelang only when run
    add_profile_parser(sub)
    return p


def _values_as_one_token(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--mesh -2x3`` as ``--mesh=-2x3``: argparse takes a value starting with ``-``
    and a digit (other than a plain negative number) for an option and says only
    "expected one argument"; joined, the value reaches our checks and their message."""
    takes_value = {flag for action in _all_actions(parser) if action.nargs != 0
                   for flag in action.option_strings}
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if (a in takes_value and i + 1 < len(argv)
                and re.match(r"-\d", argv[i + 1])):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions of ``parser`` and of its sub-commands."""
    out = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_actions(sub)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``meshtensor`` command."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_values_as_one_token(parser, argv))
    try:
        return args.func(args)
    except (ValueError, TypeError, ImportError, OSError) as e:
        print(f"meshtensor {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
