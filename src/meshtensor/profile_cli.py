"""``meshtensor profile``: the estimated time of a mesh kernel on a machine, per
superstep and bound, as a terminal summary, a Chrome trace (``--trace``, opens in
Perfetto) and a Gantt chart (``--png``); ``--compare`` ranks SUMMA, Cannon and K-split.

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
from typing import Any

from .cli import _int_at_least, prepare_png
from .machines import PRESETS, get_machine, machine_names

ALGORITHMS = ("summa_comm", "cannon_comm", "ksplit_comm", "summa", "cannon", "local")
HELP = "estimate a mesh kernel's time on a machine: supersteps, bounds, timeline"
DESCRIPTION = """\
Estimate how long a mesh kernel takes on a machine, superstep by superstep,
and what bounds each superstep (compute, memory, link, latency). The model
reads the kernel's TIR (nothing is compiled): supersteps run one after
another, each is the slowest core's compute phase plus an exchange. See
docs/perf.md."""
EPILOG = """\
examples:
  meshtensor profile --algorithm cannon_comm --size 1024 --mesh 4x4
  meshtensor profile kernels.py:my_gemm --machine wormhole-n300 --trace t.json
  meshtensor profile --compare --size 2048 --mesh 8x8 --machine wormhole-n300
  meshtensor profile --list-machines

machines: """ + ", ".join(sorted(PRESETS)) + """,
or a .json/.toml machine file (its fields: docs/perf.md)."""


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
                   help="estimate SUMMA, Cannon and K-split and name the fastest")
    p.add_argument("--list-machines", action="store_true",
                   help="print the machine presets and exit")
    p.set_defaults(func=run_profile)
    return p


def machines_table() -> str:
    """The presets, one line each, in 80 columns."""
    lines = [f"{'machine':<17s}{'mesh':>6s}{'GFLOP/s f32':>12s}{'mem GB/s':>9s}"
             f"{'link GB/s':>10s}{'hop ns':>7s}{'msg ns':>7s}{'local KiB':>10s}"]
    # nanoseconds rounded first: 1.875e-9 * 1e9 is 1.8749999999999998
    for name in machine_names():
        m = PRESETS[name]
        f32 = m.flops_per_s.get("float32")
        lines.append(f"{name:<17s}{'x'.join(map(str, m.mesh_shape)):>6s}"
                     f"{f32 / 1e9 if f32 else float('nan'):>12.1f}"
                     f"{m.mem_bandwidth / 1e9:>9.2f}{m.link_bandwidth / 1e9:>10.1f}"
                     f"{round(m.hop_latency * 1e9, 6):>7.3f}"
                     f"{round(m.message_overhead * 1e9, 6):>7.1f}"
                     f"{m.local_memory_bytes / 1024:>10.0f}")
    lines.append("sources and published/assumed status of every number: docs/perf.md")
    return "\n".join(lines)


def load_kernel(spec: str) -> Any:
    """The kernel named by ``FILE.py:FUNCTION``: a PrimFunc, compiled kernel or IRModule
    defined in the file, or what a function of no arguments returns."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise ValueError(f"kernel: expected FILE.py:FUNCTION, got {spec!r}")
    p = pathlib.Path(path)
    if p.suffix != ".py" or not p.is_file():
        raise ValueError(f"kernel: {path!r} is not a Python file")
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
    p = pathlib.Path(path)
    if p.suffix.lower() != suffix:
        raise ValueError(f"{flag}: expected a file name ending in {suffix}, got {path!r}")
    if p.is_dir():
        raise ValueError(f"{flag}: {path!r} is a folder")
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


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
    report = estimate_mesh_kernel(k.mesh_kernel, machine)
    print(report.summary(width=80, max_steps=max_steps,
                         title=f"{pathlib.Path(args.kernel).name}: one rank of {k.world} "
                               f"({nr}x{nc} mesh each)"))
    traffic = analyze_dist_communication(k)
    t = traffic.time(machine)
    m = get_machine(machine)
    print(f"\nchip-to-chip ({m.chip_link_bandwidth / 1e9:g} GB/s and "
          f"{m.chip_link_latency * 1e6:g} us per message per link), from a run on zeros:")
    print(traffic.table())
    print(f"busiest chip link {t['chip'] * 1e6:.3f} us, busiest core's on-chip legs "
          f"{t['onchip'] * 1e6:.3f} us")
    return 0


def run_profile(args: argparse.Namespace) -> int:
    """The ``profile`` command (arguments checked before anything is printed)."""
    if args.list_machines:
        print(machines_table())
        return 0
    machine = get_machine(args.machine)
    if args.kernel and (args.algorithm or args.size or args.compare):
        raise ValueError("--algorithm, --size and --compare are for the built-in GEMMs; "
                         "a user kernel (FILE.py:FUNCTION) brings its own shape")
    if args.kernel and args.dtype:
        raise ValueError("--dtype is for the built-in GEMMs; a user kernel "
                         "(FILE.py:FUNCTION) brings its own element types")
    if args.compare and (args.trace or args.png):
        raise ValueError("--trace and --png draw one kernel; drop --compare or give "
                         "--algorithm")
    if args.compare and args.algorithm:
        raise ValueError("--compare estimates summa_comm, cannon_comm and ksplit_comm; "
                         "drop --algorithm (or --compare to profile one)")
    dtype = args.dtype or "float32"
    trace = _check_out(args.trace, ".json", "--trace") if args.trace else None
    png = None
    if args.png:
        png = prepare_png(args.png)
    from .tilelang.logs import quiet_tilelang
    quiet_tilelang()
    max_steps = args.steps or None
    if args.compare:
        from .tilelang.kernels.gemm_choice import compare_gemm_algorithms
        M, N, K = args.size or (1024,) * 3
        n = parse_square_mesh(args.mesh or "4x4")
        print(compare_gemm_algorithms(M, N, K, n, machine, dtype).table())
        return 0
    from .tilelang.analysis.perf import estimate_mesh_kernel
    if args.kernel:
        from .mesh import Mesh
        from .tilelang.ir.kernel import KernelView
        mesh = Mesh.parse(args.mesh) if args.mesh else None
        kernel = load_kernel(args.kernel)
        if _is_dist_kernel(kernel):  # several chips: each rank's estimate, then the links
            return _profile_dist(kernel, machine, args, max_steps)
        if mesh is None and KernelView.of(kernel, "kernel").mesh is None:
            raise ValueError(f"kernel: {args.kernel} names no mesh (no mesh annotations "
                             f"or comm ops); give --mesh, e.g. --mesh 2x2")
        report = estimate_mesh_kernel(kernel, machine, mesh=mesh)
        title = f"{pathlib.Path(args.kernel).name} ({report.work.name}) on a " \
                f"{'x'.join(map(str, report.work.mesh.shape))} mesh"
    else:
        from .tilelang.kernels.gemm_choice import estimate_gemm
        alg = args.algorithm or "summa_comm"
        M, N, K = args.size or (1024,) * 3
        n = parse_square_mesh(args.mesh or "4x4")
        report = estimate_gemm(alg, M, N, K, n, machine, dtype)
        title = f"{alg} GEMM {M}x{N}x{K} {dtype} on a {n}x{n} mesh"
    print(report.summary(width=80, max_steps=max_steps, title=title))
    if trace is not None:
        from .tilelang.analysis.timeline import write_trace
        write_trace(report, trace)
        print(f"saved {trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
    if png is not None:
        from .tilelang.analysis.timeline import save_gantt_png
        save_gantt_png(report, png)
        print(f"saved {png}")
    return 0
