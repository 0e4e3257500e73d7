"""``meshtensor profile``: the estimated time of a mesh kernel on a machine, per
superstep and bound, as a terminal summary, a Chrome trace (``--trace``, opens in
Perfetto) and a Gantt chart (``--png``); ``--compare`` searches the built-in GEMMs'
tiles and ranks the algorithms.

    meshtensor profile --algorithm cannon_comm --size 1024 --mesh 4x4 --machine generic
    meshtensor profile my_kernels.py:gemm --machine wormhole-n300 --trace out.json
    meshtensor profile --compare --size 2048 --mesh 8x8 --machine wormhole-n300
    meshtensor profile --list-machines

The model reads the kernel's TIR; nothing is compiled or run. TileLang is imported only
when the command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import pathlib
import sys
import textwrap
from typing import Any

from .cli_args import _int_at_least, dtype_itemsize, parse_mesh, prepare_output, prepare_png
from .gemms import ALGORITHM_NAMES, algorithm as gemm_algorithm
from .text import wrap
from .machines import PRESETS, get_machine, machine_names

ALGORITHMS = ALGORITHM_NAMES  # the one list (meshtensor.gemms)
HELP = "estimate a mesh kernel's time on a machine: supersteps, bounds, timeline"
DESCRIPTION = """\
Estimate how long a mesh kernel takes on a machine, superstep by superstep,
and what bounds each superstep (compute, memory, link, latency). The model
reads the kernel's TIR (nothing is compiled): each superstep is the slowest
core's compute phase and an exchange (run with the cheapest collective
algorithm the machine has); exchanges overlap the compute that does not
need them where the machine moves data beside compute. A built-in GEMM
without --tiles takes the fastest tiles whose buffers fit the machine.
See docs/perf.md."""
EPILOG = """\
examples:
  meshtensor profile --algorithm cannon_comm --size 1024 --mesh 4x4
  meshtensor profile kernels.py:my_gemm --machine wormhole-n300 --trace t.json
  meshtensor profile --compare --size 2048 --mesh 8x8 --machine wormhole-n300
  meshtensor profile --list-machines

machines: """ + "\n  ".join(textwrap.wrap(", ".join(sorted(PRESETS)) + ", or a .json/.toml "
                                         "machine file (its fields: docs/perf.md)", 68))


def parse_gemm_size(text: str) -> tuple[int, int, int]:
    """``"1024"`` -> ``(1024, 1024, 1024)``; ``"512x256x128"`` -> ``(M, N, K)``.

    >>> parse_gemm_size("512x256x128")
    (512, 256, 128)
    """
    parts = text.lower().split("x")
    if len(parts) not in (1, 3) or not all(p.strip().isdigit() for p in parts) \
            or any(int(p) < 1 for p in parts):
        raise argparse.ArgumentTypeError(f"expected a positive size like 1024 or MxNxK "
                                         f"like 512x256x128, got {text!r}")
    vals = [int(p) for p in parts]
    return (vals[0],) * 3 if len(vals) == 1 else (vals[0], vals[1], vals[2])


def parse_tiles(text: str) -> tuple[int, int, int]:
    """``"128x128x32"`` -> ``(128, 128, 32)``.

    >>> parse_tiles("128x64x32")
    (128, 64, 32)
    """
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected positive BMxBNxBK like 128x128x32, got "
                                         f"{text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def parse_square_mesh(text: str) -> int:
    """The side of a square mesh: ``"4x4"`` or ``"4"`` -> 4 (the built-in GEMMs run on
    ``n x n`` meshes).

    >>> parse_square_mesh("8x8"), parse_square_mesh("2")
    (8, 2)
    """
    parts = text.lower().split("x")
    if not all(p.strip().isdigit() for p in parts) or len(parts) > 2:
        raise ValueError(f"--mesh: expected a square mesh like 4x4, got {text!r}")
    sizes = [int(p) for p in parts]
    if len(set(sizes)) != 1 or sizes[0] < 1:
        raise ValueError(f"--mesh: the built-in GEMMs run on a square n x n mesh; got "
                         f"{text!r} (use e.g. 4x4)")
    return sizes[0]


def add_profile_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``profile`` on the ``meshtensor`` command's subparsers."""
    p = sub.add_parser("profile", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", nargs="?", metavar="FILE.py:FUNCTION",
                   help="a user's kernel: a PrimFunc (or a function of no arguments "
                        "returning one) in a Python file; default: a built-in GEMM")
    p.add_argument("--algorithm", choices=ALGORITHMS, default=None, metavar="ALGO",
                   help="built-in GEMM: " + ", ".join(ALGORITHMS) +
                   " (default summa_comm)")
    p.add_argument("--tiles", type=parse_tiles, default=None, metavar="BMxBNxBK",
                   help="the tiles of a tiled GEMM (summa_comm, cannon_comm, "
                        "splitk_comm); default: the fastest whose buffers fit")
    p.add_argument("--copies", type=_int_at_least(1), default=None, metavar="C",
                   help="layers of cannon25d_comm (default: the fastest that fits)")
    p.add_argument("--size", type=parse_gemm_size, default=None, metavar="N|MxNxK",
                   help="GEMM size (default 1024)")
    p.add_argument("--mesh", default=None,
                   help="mesh like 4x4 (built-in GEMMs: default 4x4; a user kernel: "
                        "only when it names no mesh)")
    p.add_argument("--machine", default="generic",
                   help="preset name or machine file (default generic)")
    p.add_argument("--dtype", default=None,
                   help="element type of the built-in GEMMs (default float32)")
    p.add_argument("--trace", metavar="OUT.json",
                   help="write a Chrome trace (open in https://ui.perfetto.dev)")
    p.add_argument("--png", metavar="OUT.png", help="save a Gantt chart (needs matplotlib)")
    p.add_argument("--steps", type=_int_at_least(0), default=40,
                   help="supersteps listed (default 40; 0 lists all)")
    p.add_argument("--compare", action="store_true",
                   help="search each distributed-memory GEMM's tiles, rank them and name "
                        "the fastest that fits")
    p.add_argument("--list-machines", action="store_true",
                   help="print the machine presets and exit")
    p.set_defaults(func=run_profile)
    return p


def machines_table() -> str:
    """The presets, one line each, in 80 columns (memory: one core's port; sync: the
    barrier latency; L1: all of a core's local memories)."""
    lines = [f"{'machine':<17s}{'mesh':>5s}{'f32 GF/s':>9s}{'mem GB/s':>9s}"
             f"{'link GB/s':>10s}{'hop ns':>7s}{'msg ns':>7s}{'sync ns':>8s}"
             f"{'L1 KiB':>7s}"]
    # nanoseconds rounded first: 1.875e-9 * 1e9 is 1.8749999999999998
    for name in machine_names():
        m = PRESETS[name]
        f32 = m.flops_per_s.get("float32")
        lines.append(f"{name:<17s}{'x'.join(map(str, m.mesh_shape)):>5s}"
                     f"{f32 / 1e9 if f32 else float('nan'):>9.1f}"
                     f"{m.mem_bandwidth / 1e9:>9.2f}{m.link_bandwidth / 1e9:>10.1f}"
                     f"{round(m.hop_latency * 1e9, 6):>7g}"
                     f"{round(m.message_overhead * 1e9, 6):>7g}"
                     f"{round(m.barrier_latency * 1e9, 6):>8g}"
                     f"{m.local_memory_bytes / 1024:>7.0f}")
    lines.append("overlap, torus, multicast, chip memory bandwidth, memories by scope and")
    lines.append("the source of every number: docs/perf.md (or a machine file's fields)")
    return "\n".join(lines)


def _kernel_file(spec: str) -> tuple[pathlib.Path, str, str]:
    """``FILE.py:FUNCTION`` checked without importing anything: ``(file, path, name)``."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise ValueError(f"kernel: expected FILE.py:FUNCTION, got {spec!r}")
    p = pathlib.Path(path)
    if p.suffix != ".py" or not p.is_file():
        raise ValueError(f"kernel: {path!r} is not a Python file")
    return p, path, name


def load_kernel(spec: str) -> Any:
    """The kernel named by ``FILE.py:FUNCTION``: a PrimFunc, compiled kernel or IRModule
    defined in the file, or what a function of no arguments returns."""
    p, path, name = _kernel_file(spec)
    import tilelang  # noqa: F401  (first: it puts its bundled tvm on the path)
    from tvm import tirx
    mod_name = f"_meshtensor_profile_{abs(hash(str(p.resolve())))}"
    spec_ = importlib.util.spec_from_file_location(mod_name, p)
    module = importlib.util.module_from_spec(spec_)
    sys.path.insert(0, str(p.resolve().parent))  # the file may import its neighbours
    try:
        spec_.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(p.resolve().parent))
    if not hasattr(module, name):
        found = sorted(k for k, v in vars(module).items() if not k.startswith("_") and (
            isinstance(v, tirx.PrimFunc) or getattr(v, "__module__", None) == mod_name))
        raise ValueError(f"kernel: {path} defines no {name!r} (it defines "
                         f"{', '.join(found) or 'nothing callable'})")
    obj = getattr(module, name)
    is_kernel = isinstance(obj, tirx.PrimFunc) or hasattr(obj, "prim_func") \
        or hasattr(obj, "functions")
    if not is_kernel and callable(obj):
        try:
            need = [q.name for q in inspect.signature(obj).parameters.values()
                    if q.default is q.empty and q.kind in (q.POSITIONAL_ONLY,
                                                           q.POSITIONAL_OR_KEYWORD,
                                                           q.KEYWORD_ONLY)]
        except (TypeError, ValueError):  # no signature (a builtin): just call it
            need = []
        if need:
            raise ValueError(f"kernel: {name}() in {path} needs arguments "
                             f"({', '.join(need)}); name a kernel, or a function of no "
                             f"arguments that returns one")
        obj = obj()
    return obj


def _check_out(path: str, suffix: str, flag: str) -> pathlib.Path:
    # as show's and plan's --png: only the last folder is created, a file is named
    return prepare_output(path, flag, suffix)


def _is_dist_kernel(kernel: Any) -> bool:
    from .tilelang.transform.lower_dist import has_dist_ops
    from tvm import tirx
    if isinstance(kernel, tirx.PrimFunc):
        return has_dist_ops(kernel)
    return hasattr(kernel, "program") and hasattr(kernel, "run_ranks")


def _profile_dist(kernel: Any, machine: Any, args: argparse.Namespace,
                  max_steps: int | None) -> int:
    """A ``T.dist`` kernel: the per-rank kernel's estimate (every rank runs it), then
    the chip-to-chip traffic of a run on zeros and its alpha-beta time."""
    from .tilelang.analysis.perf import estimate_mesh_kernel
    from .tilelang.engine import compile_mesh_kernel
    from .tilelang.runtime.dist_traffic import analyze_dist_communication
    if args.trace or args.png:
        raise ValueError("--trace and --png draw one chip's supersteps; a T.dist kernel's "
                         "profile is a summary (drop them)")
    k = compile_mesh_kernel(kernel) if not hasattr(kernel, "program") else kernel
    nr, nc = k.mesh_shape
    from .mesh import Mesh
    func, left = _without_pins(k.mesh_kernel.prim_func)
    # (with no comm op left, the kernel's mesh is the rank's chip)
    report = estimate_mesh_kernel(func, machine, None if left else Mesh({"row": nr,
                                                                        "col": nc}))
    print(report.summary(width=80, max_steps=max_steps,
                         title=f"{pathlib.Path(args.kernel).name}: one rank of {k.world} "
                               f"({nr}x{nc} mesh each), its own work (the T.dist "
                               f"traffic follows)"))
    traffic = analyze_dist_communication(k)
    t = traffic.time(machine)
    m = get_machine(machine)
    print(f"\nchip-to-chip ({m.chip_link_bandwidth / 1e9:g} GB/s and "
          f"{m.chip_link_latency * 1e6:g} us per message per link), from a run on zeros:")
    print(traffic.table())
    print(f"busiest chip link {t['chip'] * 1e6:.3f} us, busiest core's on-chip legs "
          f"{t['onchip'] * 1e6:.3f} us")
    total = report.total + t["chip"] + t["onchip"]
    print("\n".join(wrap(f"estimated time {total * 1e6:.3f} us: one rank's work "
                         f"{report.total * 1e6:.3f} us + the busiest chip link + the "
                         f"on-chip legs (no overlap assumed)", 80, indent="  ")))
    return 0


def _without_pins(func: Any) -> tuple[Any, bool]:
    """The per-rank kernel without the comm ops ``LowerDist`` leaves as ordering pins
    (a permute of no pairs, a barrier of no axes): they move and wait for nothing, so
    one rank's estimate does not count them (its T.dist traffic is timed apart); and
    whether it keeps any other comm op."""
    from tvm import tirx
    from .tilelang.ir.comm_op import find_comm_ops
    ops = find_comm_ops(func)
    pins = [o.call for o in ops if o.pin]

    def post(n: Any) -> Any:
        if isinstance(n, tirx.Evaluate) and any(n.value.same_as(c) for c in pins):
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        return None
    return func.with_body(tirx.stmt_functor.ir_transform(func.body, None, post,
                                                         ["tirx.Evaluate"])), \
        len(pins) < len(ops)


def run_profile(args: argparse.Namespace) -> int:
    """The ``profile`` command (arguments checked before anything is printed)."""
    if args.list_machines:
        print(machines_table())
        return 0
    machine = get_machine(args.machine)
    if args.kernel and (args.algorithm or args.size or args.compare or args.tiles
                        or args.copies):
        raise ValueError("--algorithm, --size, --tiles, --copies and --compare are for the "
                         "built-in GEMMs; a user kernel (FILE.py:FUNCTION) brings its own "
                         "shape")
    if args.kernel and args.dtype:
        raise ValueError("--dtype is for the built-in GEMMs; a user kernel "
                         "(FILE.py:FUNCTION) brings its own element types")
    if args.compare and (args.trace or args.png):
        raise ValueError("--trace and --png draw one kernel; drop --compare or give "
                         "--algorithm")
    if args.compare and (args.algorithm or args.tiles or args.copies):
        raise ValueError("--compare searches every distributed-memory GEMM and its tiles; "
                         "drop --algorithm, --tiles and --copies (or --compare to profile "
                         "one)")
    alg = args.algorithm or "summa_comm"
    if args.tiles and not gemm_algorithm(alg).tiled:
        raise ValueError(f"--tiles: {alg} takes no tiles (tiled: summa_comm, cannon_comm, "
                         f"splitk_comm)")
    if args.copies and not gemm_algorithm(alg).copies:
        raise ValueError(f"--copies: {alg} takes no copies (cannon25d_comm does)")
    dtype = args.dtype or "float32"
    # every argument is checked before TileLang is imported (seconds on a busy machine)
    if args.kernel:
        _kernel_file(args.kernel)
        mesh = parse_mesh(args.mesh) if args.mesh else None
    else:
        n = parse_square_mesh(args.mesh or "4x4")
        if not machine.fits((n, n)):
            raise ValueError(f"--mesh: a {n}x{n} mesh does not fit machine "
                             f"{machine.name!r} ({'x'.join(map(str, machine.mesh_shape))} "
                             f"cores)")
        try:
            dtype_itemsize(dtype)
        except argparse.ArgumentTypeError as e:
            raise ValueError(f"--dtype: {e}") from None
    trace = _check_out(args.trace, ".json", "--trace") if args.trace else None
    png = None
    if args.png:
        png = prepare_png(args.png)
    M, N, K = args.size or (1024,) * 3
    n = parse_square_mesh(args.mesh or "4x4")
    from .tilelang.logs import quiet_tilelang
    quiet_tilelang()
    max_steps = args.steps or None
    if args.compare:
        from .tilelang.kernels.gemm_choice import compare_gemm_algorithms
        print(compare_gemm_algorithms(M, N, K, n, machine, dtype).table())
        return 0
    from .tilelang.analysis.perf import estimate_mesh_kernel
    if args.kernel:
        from .tilelang.ir.kernel import KernelView
        kernel = load_kernel(args.kernel)
        if _is_dist_kernel(kernel):  # several chips: each rank's estimate, then the links
            return _profile_dist(kernel, machine, args, max_steps)
        if mesh is None and KernelView.of(kernel, "kernel").mesh is None:
            raise ValueError(f"kernel: {args.kernel} names no mesh (no mesh annotations "
                             f"or comm ops); give --mesh, e.g. --mesh 2x2")
        report = estimate_mesh_kernel(kernel, machine, mesh=mesh)
        title = f"{pathlib.Path(args.kernel).name} ({report.work.name}) on a " \
                f"{'x'.join(map(str, report.work.mesh.shape))} mesh"
        note = ""
    else:
        from .tilelang.kernels.gemm_choice import best_form, estimate_gemm
        tiles, copies, note = args.tiles, args.copies, ""
        a = gemm_algorithm(alg)
        if (a.tiled and tiles is None) or (a.copies and copies is None):
            form = best_form(alg, M, N, K, n, machine, dtype)
            tiles, copies = form.tiles, form.copies
            if form.model is None and form.built is None and form.local_bytes:
                note = (f"note: no tiles of {alg} fit the machine's memory; these are the "
                        f"smallest")
            elif form.reason:
                raise ValueError(f"--algorithm: {alg} does not apply to "
                                 f"{M}x{N}x{K} on a {n}x{n} mesh ({form.reason})")
        report = estimate_gemm(alg, M, N, K, n, machine, dtype, tiles=tiles, copies=copies)
        shape = f", tiles {'x'.join(map(str, _tuple(tiles)))}" if tiles is not None else \
            f", {copies} copies" if copies is not None else ""
        title = f"{alg} GEMM {M}x{N}x{K} {dtype} on a {n}x{n} mesh{shape}"
    print(report.summary(width=80, max_steps=max_steps, title=title))
    if note:
        print(note)
    if trace is not None:
        from .tilelang.analysis.timeline import write_trace
        write_trace(report, trace)
        print(f"saved {trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
    if png is not None:
        from .tilelang.analysis.timeline import save_gantt_png
        save_gantt_png(report, png)
        print(f"saved {png}")
    return 0


def _tuple(tiles: Any) -> tuple:
    return (tiles.bm, tiles.bn, tiles.bk) if hasattr(tiles, "bm") else tuple(tiles)
