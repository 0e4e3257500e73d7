"""The ``meshtensor`` command: draw layouts, plan reshards, run the GEMM demo.

    meshtensor show --mesh 4x4 --shape 8x12 --sharding '{"x": 0, "y": 1}'
    meshtensor plan --mesh 2x3 --shape 6x6 --from "[[0],[1]]" --to "[[1],[0]]"
    meshtensor demo                     # SUMMA GEMM on a 4x4 mesh, on CPU

Sharding specs are parsed with ``ast.literal_eval`` (never ``eval``): the ``split_axes``
form (``[[0], [1]]``, ``[["x"], []]``) or the seed dict form (``{"x": 0, "y": None}``).
Every argument is checked before anything is printed; a bad one exits with status 2
and one ``meshtensor CMD: error: ...`` message. Output, errors and help fit 80 columns,
or the terminal's width when stdout is a terminal (``--width`` sets it); a long error
wraps, its later lines indented by two.
"""

from __future__ import annotations

import argparse
import ast
import functools
import glob
import os
import pathlib
import re
import shutil
import sys
import textwrap
from typing import Any, Callable, Sequence

import numpy as np

from . import __version__
from .cli_args import _int_at_least, dtype_itemsize, parse_mesh, prepare_png  # shared
from .gemms import ALGORITHM_NAMES
from .mesh import Mesh, target_list
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
DEMO_ALGORITHMS = ALGORITHM_NAMES  # the one list of the built-in GEMMs (meshtensor.gemms)
SPMDIZE_ALGORITHMS = ("summa", "cannon")  # global-view kernels that spmdize rewrites

PER_DIM_HELP = ("comma-separated ints, flat as in MLIR (e.g. {flat}) or one list per split "
                "dim (e.g. '{nested}')")
# --values materialises the whole tensor (int64): 2**24 elements = 128 MiB.
MAX_VALUES = 2 ** 24
# JSON words a spec may hold by mistake, and the Python literal meant.
JSON_WORDS = {"null": "None", "true": "True", "false": "False"}
#: TileLang indexes buffers with int32, and the demo's kernels form indices up to about
#: size * (size + 256) (K-split's staging rows run one tile past the matrix): that must
#: stay below 2**31.
DEMO_INDEX_PAD = 256
#: Bytes the demo holds at its peak per element of one size x size float32 matrix: A, B,
#: C, a second C, the NumPy reference and its error (7 matrices, 28 bytes) and the comm
#: kernels' per-core buffers (up to 37 bytes, spmdize's Cannon), rounded up; the kernels
#: that hold more say so in DEMO_BYTES_BY_ALGORITHM (split-K: each of the 16 cores holds
#: a partial C and its reduce-scatter staging, 146 bytes). A test checks every demo
#: kernel's workspace against them.
DEMO_BYTES_PER_ELEMENT = 72
DEMO_BYTES_BY_ALGORITHM = {"splitk_comm": 176, "cannon25d_comm": 80}


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
        self.exit(2, error_text(self.prog, f"{message} (see '{self.prog} --help')"))


def error_text(prog: str, message: str, width: int | None = None) -> str:
    """``prog: error: message`` wrapped to ``width`` columns (default
    :func:`output_width`), later lines indented by two; ends in a newline.

    >>> print(error_text("meshtensor plan", "--dtype: " + "word " * 20, 40), end="")
    meshtensor plan: error: --dtype: word
      word word word word word word word
      word word word word word word word
      word word word word word
    """
    width = width or output_width()
    lines = []
    for i, part in enumerate(f"{prog}: error: {message}".splitlines() or [""]):
        lines += textwrap.wrap(part, width, initial_indent="" if i == 0 else "  ",
                               subsequent_indent="  ", break_long_words=False,
                               break_on_hyphens=False) or [""]
    return "\n".join(lines) + "\n"


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
        # trailing unsplit entries vanish in Sharding (equal layouts, equal values):
        # past the rank they are a mistake only the text shows
        if ndim is not None and len(value) > ndim and not any(value[ndim:]):
            raise ValueError(f"sharding {text!r} has {len(value)} entries, one per tensor "
                             f"dim, but --shape has rank {ndim}")
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


def available_memory(meminfo: str = "/proc/meminfo",
                     cgroup: str = "/sys/fs/cgroup") -> int | None:
    """Bytes this process can still allocate without swapping, as far as Linux says:
    ``MemAvailable``, lowered to what the cgroup (v2) leaves (``memory.max`` less
    ``memory.current``); None where neither can be read.

    >>> available_memory("/nonexistent", "/nonexistent") is None
    True
    """
    found: list[int] = []
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = pathlib.Path(cgroup, "memory.max").read_text().strip()
        if limit != "max":
            used = int(pathlib.Path(cgroup, "memory.current").read_text())
            found.append(max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def _largest(fits: Callable[[int], bool], hi: int) -> int:
    """The largest ``n`` in ``[0, hi]`` with ``fits(n)`` (``fits`` is monotone)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def check_demo_size(size: int, available: int | None, algorithm: str = "summa_comm") -> None:
    """Refuse a ``demo --size`` whose kernels TileLang cannot index with int32, or whose
    matrices and ``algorithm``'s per-core buffers do not fit ``available`` bytes (None:
    not checked), before anything is built.

    >>> check_demo_size(100000, None)
    Traceback (most recent call last):
    ...
    ValueError: --size 100000: TileLang indexes buffers with int32, and a 100000^3 GEMM's indices pass 2**31; at most --size 46213
    >>> check_demo_size(40000, 24 * 2 ** 30)
    Traceback (most recent call last):
    ...
    ValueError: --size 40000: needs about 107.3 GiB of memory (72 bytes per element of a 40000x40000 matrix: operands, results, the NumPy check, per-core buffers), 24.0 GiB available; at most --size 18918
    """
    def indexable(n: int) -> bool:
        return n * (n + DEMO_INDEX_PAD) < 2 ** 31

    if not indexable(size):
        raise ValueError(f"--size {size}: TileLang indexes buffers with int32, and a "
                         f"{size}^3 GEMM's indices pass 2**31; at most --size "
                         f"{_largest(indexable, size)}")
    if available is None:
        return

    per = DEMO_BYTES_BY_ALGORITHM.get(algorithm, DEMO_BYTES_PER_ELEMENT)

    def fits(n: int) -> bool:
        return per * n * n <= available

    if not fits(size):
        gib = 2 ** 30
        raise ValueError(f"--size {size}: needs about "
                         f"{per * size * size / gib:.1f} GiB of memory "
                         f"({per} bytes per element of a {size}x{size} "
                         f"matrix: operands, results, the NumPy check, per-core buffers), "
                         f"{available / gib:.1f} GiB available; at most --size "
                         f"{_largest(fits, size)}")


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
                               or args.target != "c" or args.tir):
        raise ValueError("--tilelang-mesh runs the Tilelang-Mesh GEMM on CPU: it takes no "
                         "--spmdize, --algorithm, --target or --tir")
    algorithm = _demo_algorithm(args)
    if args.tir and not args.spmdize:
        raise ValueError("--tir prints the global-view kernel that --spmdize rewrites: "
                         "give it with --spmdize")
    if args.spmdize and args.target != "c":
        raise ValueError(f"--spmdize runs on CPU (--target c), got --target {args.target}")
    if args.target == "cuda" and not cuda_visible():
        raise ValueError("--target cuda needs a CUDA GPU; none is visible (no /dev/nvidia* "
                         "device, or CUDA_VISIBLE_DEVICES hides them)")
    check_demo_size(args.size, available_memory(), algorithm)
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
                            target=args.target, show_kernel=args.tir, width=width)
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
    mesh_help = (f"mesh sizes like 4x4 or 2x3x2, or a named mesh accelerator (a "
                 f"target) and its mesh of cores: {target_list()}")
    png_help = ("save a picture to this .png file (needs matplotlib; a missing last "
                "folder is created)")

    show = sub.add_parser("show", help="draw which part of a tensor each device holds "
                          "(text, or --png)",
                          description="Draw which part of a tensor each device holds.")
    show.add_argument("--mesh", required=True, help=mesh_help)
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
    plan.add_argument("--mesh", required=True, help=mesh_help)
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
    demo.add_argument("--tir", action="store_true",
                      help="with --spmdize: also print the input kernel's TIR (about 60 "
                           "lines)")
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
    from .calibrate_cli import add_calibrate_parser  # likewise
    add_calibrate_parser(sub)
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


#: The status of a command whose reader closed the pipe (``| head``): what a C tool
#: killed by SIGPIPE gives its shell, 128 + 13.
CLOSED_PIPE_STATUS = 141


def _closed_pipe() -> int:
    """The reader of stdout went away: point stdout at /dev/null, so that Python's flush
    at exit does not fail again, and end quietly (a pager or ``head`` is not an error)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, ValueError, OSError):  # a stdout without a file (tests)
        pass
    return CLOSED_PIPE_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``meshtensor`` command."""
    try:
        parser = build_parser()
        argv = sys.argv[1:] if argv is None else list(argv)
        args = parser.parse_args(_values_as_one_token(parser, argv))
        try:
            status = args.func(args)
        except BrokenPipeError:
            raise
        except (ValueError, TypeError, ImportError, OSError) as e:
            sys.stderr.write(error_text(f"meshtensor {args.command}", str(e)))
            return 2
        sys.stdout.flush()  # a closed pipe shows here when the output was buffered
        return status
    except BrokenPipeError:
        return _closed_pipe()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
