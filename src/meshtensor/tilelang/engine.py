"""The pipeline that makes a mesh kernel run: the mesh passes, in the order
:func:`mesh_pipeline` gives (written here once), then ``tilelang.compile``.
``compile_mesh_kernel`` is the one entry; :class:`MeshKernel` is what it returns; the
passes' options are :class:`~meshtensor.tilelang.pass_config.MeshPassConfig`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import tvm
from tvm import tirx

from .analysis.races import find_races, grid_mesh
from .analysis.verify import VerifyMeshTensors
from .c_header import header_flags
from .ir.comm_op import find_comm_ops
from .ir.launch import Launch
from .ir.memory import Memory
from .ir.mesh_param import MX_PARAMS, bind_symbols, mesh_params
from .ir.scope import find_calls
from .logs import quiet_tilelang
from ..text import fitted
from .pass_config import DEFAULT, MeshPassConfig
from .transform.lower_comm import WORKSPACE_ATTR, lower_mesh_comm
from .transform.narrow_float import FORMATS, legalize_narrow_floats, narrow_dtypes
from .transform.select_min_max import select_min_max
from .transform.c_math import c_math_calls
from .transform.region_reduce import region_reductions
from .transform.shared_scope import one_dynamic_shared
from .transform.tilelang_mesh import SIZE_PARAMS, prepare_tilelang_mesh, specialize_sizes
from .transform.protect_indices import protect_folded_indices
from .transform.race_check import HEADER, RaceShadow, add_shadow_param
from .transform.spmdize import SPMDIZED_ATTR
from .transform.wrap_casts import wrap_narrowing_casts

__all__ = ["CPU_FLAGS", "MeshKernel", "SizedMeshKernel", "Build", "Stage", "mesh_pipeline",
           "compile_mesh_kernel", "guard_stock_compile"]

# gcc's -O3 loop vectoriser (dynamic cost model) turns the GEMM micro-kernel's k loop
# into slow gathers for power-of-two tiles (1.8 vs 45 GFLOP/s at 512^3, measured here);
# the very-cheap model keeps the SLP-vectorised, register-blocked body.
# TileLang's C code type-puns (a buffer written through float4*, read through float2*;
# the lowering's per-core copies are views into one byte workspace), which -O3's
# type-based alias analysis may reorder: -fno-strict-aliasing. gcc 12's loop
# distribution into memset/memcpy patterns reorders stores of a core loop that mixes
# scalar and vector-struct stores into the workspace (found by the kernel fuzzer, kept
# as reproducers in tests): -fno-tree-loop-distribute-patterns. With -march=native
# (FMA units) g++ contracts ``a * b + c`` into one fused operation, rounded once: a
# float32 T.gemm differed from its per-operation value in 52,353 of 65,536 cells at
# 256^3 (`x * s - m * s` in a softmax too): -ffp-contract=off keeps each operation
# rounded as TileLang's semantics say (no slower at 256^3, measured here).
CPU_FLAGS = ["-O3", "-march=native", "-fvect-cost-model=very-cheap", "-fno-strict-aliasing",
             "-fno-tree-loop-distribute-patterns", "-ffp-contract=off"]


@dataclass(frozen=True, eq=False)
class MeshKernel:
    """A compiled mesh kernel: call it like the ``JITKernel`` (same arguments).

    ``prim_func`` is the SOURCE PrimFunc (comm ops intact, for the analysis passes),
    ``lowered`` what :func:`LowerMeshComm` made of it, ``jit_kernel`` the compiled kernel.
    ``mesh_tensors``: for a kernel with ``T.MeshTensor`` parameters, ``(parameter index,
    MeshParam, written)`` each: the call takes their GLOBAL torch tensors, splits each
    into the per-core shards the compiled kernel takes (zero past the global edge) and
    writes the shards of a written one back (dropping cells past the edge; replicated
    copies must agree, else ``ValueError``).
    """

    prim_func: tirx.PrimFunc
    lowered: tirx.PrimFunc
    jit_kernel: Any
    workspace: Any = None  # the scratch array passed after the kernel's arguments, if any
    mesh_tensors: tuple = ()
    #: ``(parameter index, dtype)`` of each parameter of a narrow float dtype
    #: (``bfloat16``, float8): the compiled kernel takes its bits, the caller the tensor
    narrow: tuple = ()
    # the checked run (check_races=True): its RaceShadow, the cores' mesh, the record
    race_check: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.mesh_tensors:
            return self._call_global(args, kwargs)
        return self._run(*args, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        if self.narrow:
            args = _as_bits(args, self.narrow)
        # one kernel call at a time: the cores' buffers live in this one array
        extra = [] if self.workspace is None else [self.workspace]
        if self.race_check is not None:
            shadow, mesh, record = self.race_check
            record.fill_(-1)
            record[:HEADER] = 0
            extra.append(record)
        out = self.jit_kernel(*args, *extra, **kwargs)
        if self.race_check is not None:
            race = shadow.race(record[:HEADER].numpy(), mesh)
            if race is not None:
                raise ValueError(race.message("compile_mesh_kernel (check_races=True)"))
        return _from_bits(out, getattr(self.jit_kernel, "out_idx", None), self.narrow) \
            if self.narrow else out

    def _call_global(self, args: tuple, kwargs: dict) -> Any:
        args = _mx_args(args, self.prim_func)
        n = len(self.prim_func.params)
        if len(args) != n or kwargs:
            raise ValueError(f"MeshKernel: the kernel takes {n} positional arguments (global "
                             f"tensors for its T.MeshTensor parameters), got {len(args)}"
                             f"{' and keywords ' + str(sorted(kwargs)) if kwargs else ''}")
        # symbolic sizes (T.dynamic) are read from the global tensors: the records for
        # this call's sizes, and the values the kernel takes after its own arguments
        tensors, sizes = bind_symbols(self.mesh_tensors, args,
                                      self.lowered.attrs.get(SIZE_PARAMS, ()))
        stacks = {}
        for i, p, _ in tensors:
            p.check(args[i], i)
            stacks[i] = p.scatter(args[i])
        out = self._run(*[stacks.get(i, a) for i, a in enumerate(args)], *sizes)
        for i, p, written in tensors:
            if written:
                p.gather(stacks[i], args[i])
        return out

    def get_kernel_source(self) -> str:
        return self.jit_kernel.get_kernel_source()


def _mx_args(args: tuple, func: tirx.PrimFunc) -> tuple:
    """The caller's arguments with each MX ``T.MeshTensor``'s ``(elements, scales)``
    pair as the kernel's two parameters (docs/tilelang_mesh.md, "MX block-scaled
    kinds")."""
    pairs = [tuple(int(i) for i in p) for p in func.attrs.get(MX_PARAMS, [])] \
        if func.attrs is not None else []
    if not pairs:
        return args
    firsts = {e: s for e, s in pairs}
    seconds = set(firsts.values())
    out: list = []
    it = iter(args)
    for i in range(len(func.params)):
        if i in seconds:
            continue
        try:
            a = next(it)
        except StopIteration:
            return args  # the count is checked (and named) by the caller
        if i in firsts:
            name = str(func.buffer_map[func.params[i]].name)
            if not (isinstance(a, (tuple, list)) and len(a) == 2):
                raise TypeError(f"MeshKernel: the MX T.MeshTensor parameter {name!r} takes "
                                f"an (elements, scales) pair of torch tensors (docs/"
                                f"tilelang_mesh.md, MX block-scaled kinds), got "
                                f"{type(a).__name__}")
            out.extend(a)
        else:
            out.append(a)
    return tuple(out) + tuple(it)


def _is_loop_break(call: tirx.Call) -> bool:
    return getattr(call.op, "name", None) == "tl.loop_break"


def _out_idx(out_idx: Any, nparams: int) -> Any:
    """``out_idx`` with negative indices counted from the kernel's own parameters (the
    workspace argument appended by the lowering is never an output)."""
    if out_idx is None:
        return None
    one = isinstance(out_idx, int) and not isinstance(out_idx, bool)
    idx = [out_idx] if one else list(out_idx)
    out = []
    for i in idx:
        if not isinstance(i, int) or isinstance(i, bool) or not -nparams <= i < nparams:
            raise ValueError(f"compile_mesh_kernel: out_idx {out_idx!r}: each index must be "
                             f"an int in [-{nparams}, {nparams}) (the kernel has {nparams} "
                             f"parameters)")
        out.append(i % nparams)
    return out[0] if one else out


@dataclass
class Build:
    """What the pipeline learns about one kernel while it runs (the stages' outputs
    that are not IR): its ``T.MeshTensor`` parameters and, for the checked run, the
    race shadow and the mesh of its cores. ``lowered``: the kernel after
    ``LowerMeshComm`` (what :attr:`MeshKernel.lowered` shows)."""

    config: MeshPassConfig
    target: str
    mesh_tensors: tuple = ()
    shadow: Any = None
    race_mesh: Any = None
    lowered: Any = None
    has_comm: bool = False


@dataclass(frozen=True)
class Stage:
    """One step of :func:`mesh_pipeline`: a named function of the kernel and the
    :class:`Build`."""

    name: str
    run: Callable[[tirx.PrimFunc, Build], tirx.PrimFunc]


def _spmdize(func: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
    from .transform.spmdize import spmdize
    return spmdize(func)


def _prepare(func: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
    prepared = prepare_tilelang_mesh(func)
    b.mesh_tensors = prepared.params
    b.has_comm = bool(find_comm_ops(prepared.func))
    return prepared.func


def _check_races(func: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
    races = find_races(func, "compile_mesh_kernel", b.config)
    if races.race is not None:
        raise ValueError(races.race.message("compile_mesh_kernel"))
    if b.config.check_races:  # the accesses left unchecked are checked as it runs
        b.shadow = RaceShadow.plan(Memory.of(func).params)
        ops = find_comm_ops(func)
        b.race_mesh = ops[0].mesh if ops else grid_mesh(func)
    return func


def _verify(func: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
    return VerifyMeshTensors()(tvm.IRModule({"main": func}))["main"]


def _lower(func: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
    lowered = lower_mesh_comm(func, b.config.workspace, b.shadow, b.config)
    if b.shadow is not None:
        if not b.has_comm:  # no supersteps: the blocks are the cores, in one superstep
            launch = Launch.of(func, b.race_mesh, "compile_mesh_kernel")
            lowered = lowered.with_body(b.shadow.instrument(lowered.body, launch.core_id()))
        lowered = add_shadow_param(lowered, b.shadow)
    if str(b.target).split()[0] == "c" and find_calls(lowered, _is_loop_break):
        # TileLang 0.1.15's C code generator has no break: its error names no statement
        raise ValueError("compile_mesh_kernel: T.loop_break() cannot be compiled for target "
                         "'c' (TileLang's C code generator has no break); end the loop with "
                         "an `if` around its remaining work instead")
    b.lowered = lowered
    return lowered


def mesh_pipeline(config: MeshPassConfig = DEFAULT, target: str = "c") -> tuple[Stage, ...]:
    """The mesh passes, in the order ``compile_mesh_kernel`` runs them before
    ``tilelang.compile``:

    1. ``SpmdizeMeshCopies`` (only with ``config.spmdize``): global-view copies become
       comm ops from each tile's owner;
    2. ``PrepareTilelangMesh``: a SUNMMIO kernel's ``T.MeshTensor`` parameters become
       per-core stacks, its launch one program per core (other kernels unchanged);
    3. ``WrapNarrowingCasts``: a narrowing cast's wrap written out;
    4. ``CheckRaces``: a race on global memory is refused (with ``config.check_races``,
       the checked run is planned);
    5. ``VerifyMeshTensors``: copies of annotated tensors stay in whole blocks;
    6. ``LowerMeshComm``: comm ops become supersteps over the cores' buffers;
    7. ``RegionReductions`` (target ``c``): a reduction over part of a buffer as its
       loops;
    8. ``SelectMinMax`` (target ``c``): min/max of loaded values as selects;
    9. ``OneDynamicShared`` (target ``c``): several ``shared.dyn`` buffers as ``shared``;
    10. ``CMathCalls`` (target ``c``): math calls in a form its C code prints;
    11. ``ProtectFoldedIndices``: indices TileLang would fold wrongly computed first.

    >>> [s.name for s in mesh_pipeline(MeshPassConfig(spmdize=True))][:3]
    ['SpmdizeMeshCopies', 'PrepareTilelangMesh', 'WrapNarrowingCasts']
    """
    on_c = str(target).split()[0] == "c"
    stages = [Stage("SpmdizeMeshCopies", _spmdize)] if config.spmdize else []
    stages += [Stage("PrepareTilelangMesh", _prepare),
               # first: TVM's simplifier (the lowering's included) folds a narrowing cast
               # of a value it knows, or reads through one, as if it did not wrap
               Stage("WrapNarrowingCasts", lambda f, b: wrap_narrowing_casts(f)),
               Stage("CheckRaces", _check_races),
               Stage("VerifyMeshTensors", _verify), Stage("LowerMeshComm", _lower)]
    if on_c:
        # TileLang's CPU reduction reads and writes whole buffers, whatever region
        stages.append(Stage("RegionReductions", lambda f, b: region_reductions(f)))
        # TVM's C code generator reuses a min/max operand's load across a store
        stages.append(Stage("SelectMinMax", lambda f, b: select_min_max(f, b.config)))
        # one core's shared and shared.dyn memory are the same on the C back end
        stages.append(Stage("OneDynamicShared", lambda f, b: one_dynamic_shared(f)))
        # TVM's C code generator prints few math intrinsics
        stages.append(Stage("CMathCalls", lambda f, b: c_math_calls(f)))
    stages.append(Stage("ProtectFoldedIndices",
                        lambda f, b: protect_folded_indices(f, b.config)))
    return tuple(stages)


def compile_mesh_kernel(func: tirx.PrimFunc, target: str = "c", *, check_races: bool = False,
                        spmdize: bool = False, config: MeshPassConfig | None = None,
                        **kw: Any) -> MeshKernel:
    """Run the mesh passes (:func:`mesh_pipeline`: the race check, ``VerifyMeshTensors``,
    ``LowerMeshComm``, ...) and ``tilelang.compile`` a mesh kernel.

    ``check_races=True`` also checks, as the kernel runs, the accesses the static race
    check cannot evaluate: a race raises ``ValueError`` from the call (see
    :mod:`~.transform.race_check`). ``spmdize=True`` first turns a global-view kernel
    into one with comm ops. ``config``: every option of the passes
    (:class:`~meshtensor.tilelang.pass_config.MeshPassConfig`; ``check_races`` and
    ``spmdize`` set its fields of those names). ``kw`` goes to ``tilelang.compile``
    (``compile_flags`` defaults to :data:`CPU_FLAGS` on ``"c"``; ``out_idx`` counts the
    kernel's own parameters). A kernel without comm ops compiles as ``tilelang.compile``
    would, but for target ``"c"`` its ``min``/``max`` of loaded values become selects.
    On ``"c"`` with g++, TileLang's C header is read precompiled (see
    :mod:`~meshtensor.tilelang.c_header`). TileLang's INFO lines are off while it
    compiles (see :func:`~meshtensor.tilelang.quiet_tilelang`).

    Example::

        kernel = compile_mesh_kernel(build_gemm("summa_comm", 64, 64, 64))
        kernel(a, b, c)          # torch tensors, as for the JITKernel
    """
    if not isinstance(func, tirx.PrimFunc):
        raise TypeError(f"compile_mesh_kernel: expected a PrimFunc, got {type(func).__name__}")
    config = config or DEFAULT
    if check_races or spmdize:
        config = dataclasses.replace(config, check_races=config.check_races or check_races,
                                     spmdize=config.spmdize or spmdize)
    from .transform.lower_dist import has_dist_ops
    try:
        if has_dist_ops(func):  # a T.dist kernel: every rank (runtime.dist_kernel)
            return _compile_dist(func, target, config, kw)
        try:
            return _compile_mesh_kernel(func, target, config, dict(kw))
        except ValueError as e:
            if not (_symbols(func) and find_comm_ops(func) and "symbolic" in str(e)):
                raise
            # comm ops in loops bounded by symbolic sizes: compiled per call's sizes
            return SizedMeshKernel(func, target, config, kw)
    except (ValueError, TypeError) as e:
        if func.attrs is None or SPMDIZED_ATTR not in func.attrs:
            raise fitted(e)  # (a refusal in 80 columns)
        # spmdize promises kernels the layer accepts: a refusal here is its bug
        raise ValueError(f"compile_mesh_kernel refuses a kernel that spmdize wrote, which "
                         f"is a bug in spmdize, not in your kernel (please report it with "
                         f"the global-view kernel): {e}") from None


def _symbols(func: tirx.PrimFunc) -> tuple[str, ...]:
    """The names of the symbolic sizes of ``func``'s ``T.MeshTensor`` shapes, sorted."""
    return tuple(sorted({s for p in mesh_params(func).values() for s in p.symbols}))


class SizedMeshKernel:
    """A mesh kernel whose comm ops run in loops (or read regions) bounded by symbolic
    sizes (``T.dynamic``): which cores join each op, and whether each region it reads
    lies in its shard, depend on the sizes. Each call reads the sizes from its global
    tensors, compiles the kernel for them (:func:`specialize_sizes`, then every check
    of :func:`compile_mesh_kernel`: a size that makes it wrong is refused then) once per
    distinct set of sizes, and runs it. ``kernels``: the compiled ones, by sizes.

    Example::

        kernel = compile_mesh_kernel(dynamic_gemm)   # comm ops over T.dynamic("m") rows
        kernel(a, b, c)                              # compiled for a's m, then run
    """

    def __init__(self, func: tirx.PrimFunc, target: str, config: MeshPassConfig,
                 kw: dict) -> None:
        self.prim_func = func
        self.target, self.config, self.kw = target, config, dict(kw)
        self.names = _symbols(func)
        self.kernels: dict[tuple[int, ...], MeshKernel] = {}

    def sizes(self, args: tuple) -> dict[str, int]:
        """The symbolic sizes the global tensors ``args`` give (``ValueError`` where
        two tensors disagree, as for :class:`MeshKernel`)."""
        params = mesh_params(self.prim_func)
        _, values = bind_symbols([(i, p, False) for i, p in params.items()], args,
                                 self.names)
        return dict(zip(self.names, values))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        n = len(self.prim_func.params)
        if len(args) != n or kwargs:
            raise ValueError(f"MeshKernel: the kernel takes {n} positional arguments (global "
                             f"tensors for its T.MeshTensor parameters), got {len(args)}")
        sizes = self.sizes(args)
        key = tuple(sizes[k] for k in self.names)
        kernel = self.kernels.get(key)
        if kernel is None:
            func = specialize_sizes(self.prim_func, sizes)
            kernel = compile_mesh_kernel(func, self.target, config=self.config, **self.kw)
            self.kernels[key] = kernel
        return kernel(*args)


def _compile_dist(func: tirx.PrimFunc, target: str, config: MeshPassConfig, kw: dict) -> Any:
    """A ``T.dist`` kernel: lowered to one per-rank program (``LowerDist``), compiled
    as a mesh kernel, run by :class:`~.runtime.dist_kernel.DistKernel`
    (``config.check_races``: its checked run)."""
    from .runtime import shim
    from .runtime.dist_kernel import DistKernel
    from .transform.lower_dist import lower_dist
    if str(target).split()[0] != "c":
        raise ValueError(f"compile_mesh_kernel: T.dist kernels run on target 'c' (the "
                         f"emulator), got {target!r}")
    if kw.get("out_idx") is not None:
        raise ValueError("compile_mesh_kernel: out_idx is not supported for a T.dist kernel; "
                         "pass the global output tensors instead")
    from .transform.split_cores import split_cores
    lowered, program = lower_dist(func)
    shim.load()  # the runtime's C entry points, before the kernel's library is loaded
    rank = dataclasses.replace(config, check_races=False)
    out: dict = {}

    def lower_per_core(f: tirx.PrimFunc, b: Build) -> tirx.PrimFunc:
        # supersteps first, then one program per core (transform.split_cores)
        ops = find_comm_ops(f)
        f, out["program"] = split_cores(_lower(f, b), ops, program)
        b.lowered = f
        return f

    stages = tuple(Stage(s.name, lower_per_core) if s.name == "LowerMeshComm" else s
                   for s in mesh_pipeline(rank, target))
    mk = _compile_mesh_kernel(lowered, target, rank, dict(kw), stages)
    return DistKernel(func, lowered, out["program"], mk, config.check_races, _rebuild_dist)


def _rebuild_dist(text: str, regs: list, check_races: bool) -> Any:
    """A pickled :class:`~.runtime.dist_kernel.DistKernel` compiled again from its
    source (TVM JSON; its ``T.MeshTensor`` records are its attributes)."""
    return compile_mesh_kernel(tvm.ir.load_json(text), check_races=check_races)


def _compile_mesh_kernel(func: tirx.PrimFunc, target: str, config: MeshPassConfig, kw: dict,
                         stages: tuple | None = None) -> MeshKernel:
    import tilelang
    import torch

    build = Build(config, target)
    source = func
    for stage in stages or mesh_pipeline(config, target):
        source = stage.run(source, build)
    if kw.get("out_idx") is not None and build.mesh_tensors:
        raise ValueError("compile_mesh_kernel: out_idx is not supported for a kernel with "
                         "T.MeshTensor parameters; pass the global output tensors instead")
    if "out_idx" in kw:
        kw["out_idx"] = _out_idx(kw["out_idx"], len(func.params))
    on_c = str(target).split()[0] == "c"
    if target == "c" and kw.get("compile_flags") is None:
        kw["compile_flags"] = list(CPU_FLAGS)
    if on_c:  # TileLang's C header, precompiled once per flag set: 1.5 s less a kernel
        flags = kw.get("compile_flags") or []
        flags = [flags] if isinstance(flags, str) else list(flags)
        kw["compile_flags"] = flags + header_flags(flags)
    device = "cuda" if str(target).startswith("cuda") else "cpu"
    lowered = build.lowered
    check = None if build.shadow is None else \
        (build.shadow, build.race_mesh,
         torch.empty(build.shadow.size, dtype=torch.int32, device=device))
    with quiet_tilelang():
        if not build.has_comm:
            return MeshKernel(func, lowered, _compile(source, target, kw),
                              mesh_tensors=build.mesh_tensors,
                              narrow=_narrow_params(lowered), race_check=check)
        # buffers filled only by exchanges look uninitialised to TileLang's check
        configs = dict(kw.pop("pass_configs", None) or {})
        configs.setdefault(tilelang.PassConfigKey.TL_DISABLE_BUFFER_INIT_CHECK, True)
        kw["pass_configs"] = configs
        jit = _compile(source, target, kw)
    nbytes = int(lowered.attrs[WORKSPACE_ATTR])
    return MeshKernel(func, lowered, jit, torch.empty(nbytes, dtype=torch.uint8, device=device),
                      build.mesh_tensors, _narrow_params(lowered), check)


def _narrow_params(func: tirx.PrimFunc) -> tuple:
    out = []
    for i, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is not None and str(buf.dtype) in FORMATS:
            out.append((i, str(buf.dtype)))
    return tuple(out)


def _as_bits(args: tuple, narrow: tuple) -> tuple:
    """The caller's narrow float tensors as views of their bits (the compiled kernel's
    parameters are ``uint16``/``uint8``); a tensor of another dtype is refused here,
    where the message can name the dtype the kernel wants."""
    import torch

    args = list(args)
    for i, dtype in narrow:
        if i >= len(args):
            continue
        a = args[i]
        bits = getattr(torch, FORMATS[dtype].storage)
        # a format torch has no dtype for travels as its bits (ml_dtypes' .view)
        want = getattr(torch, dtype, None) or bits
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"MeshKernel: argument {i} must be a torch tensor of dtype "
                            f"{dtype}, got {type(a).__name__}")
        if a.dtype != want:
            raise ValueError(f"MeshKernel: argument {i} must have dtype {want} (the "
                             f"kernel's parameter is {dtype}), got {a.dtype}")
        args[i] = a.view(bits)
    return tuple(args)


def _from_bits(out: Any, idx: Any, narrow: tuple) -> Any:
    """Tensors the kernel allocated for its ``out_idx`` parameters, viewed as their
    dtype."""
    import torch

    if out is None or idx is None:
        return out
    outs = out if isinstance(out, (list, tuple)) else [out]
    idx = [idx] if isinstance(idx, int) else list(idx)
    names = dict(narrow)
    fixed = [o.view(getattr(torch, names[int(i)], o.dtype)) if int(i) in names else o
             for o, i in zip(outs, idx)]
    return fixed if isinstance(out, (list, tuple)) else fixed[0]


def _narrow_context(target: str) -> Any:
    """TileLang's kernel cache and backend context for ``target``, with the CPU pipeline's
    ``BF16ComputeLegalize`` step replaced by :func:`legalize_narrow_floats` (TileLang's
    own pipeline function, run with that one name bound to ours)."""
    import dataclasses
    import types

    import tilelang.cpu.pipeline as cpu_pipeline
    from tilelang.backend.pass_pipeline import PassPipeline
    from tilelang.cache import _resolve_cache_dispatch

    cache, context, _ = _resolve_cache_dispatch(target, None, None, None)
    stock = cpu_pipeline.CPUPassPipelineBody
    if "BF16ComputeLegalize" not in stock.__code__.co_names or \
            "tirx" not in stock.__code__.co_names:  # pragma: no cover (other TileLang)
        raise ValueError("compile_mesh_kernel: this TileLang's CPU pipeline has no "
                         "BF16ComputeLegalize step to replace; bfloat16/float8 kernels need "
                         "tilelang==0.1.15")

    class _Transform:
        def __getattr__(self, name: str) -> Any:
            if name == "BF16ComputeLegalize":
                return _legalize_pass
            return getattr(tirx.transform, name)

    class _Tirx:
        transform = _Transform()

        def __getattr__(self, name: str) -> Any:
            return getattr(tirx, name)

    glb = dict(stock.__globals__)
    glb["tirx"] = _Tirx()
    body = types.FunctionType(stock.__code__, glb, stock.__name__, stock.__defaults__,
                              stock.__closure__)
    module = dataclasses.replace(context.module, name="meshtensor-narrow-float", pipelines={
        kind: PassPipeline(kind, body) for kind in context.module.pipelines})
    return cache, dataclasses.replace(context, module=module)


def _legalize_pass() -> Any:
    from .transform.narrow_float import LegalizeNarrowFloats

    return LegalizeNarrowFloats()


def _narrow_float_version() -> str:
    """A digest of the narrow float lowering's source: TileLang's kernel cache keys on
    the function, not on the pipeline that compiles it, so the function carries it."""
    import hashlib

    from .transform import narrow_float
    with open(narrow_float.__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:16]

#: TileLang's C source builds a vector from separate lanes: an index vector's lanes
#: (``v_.s0``, ``v_.s1``) read one by one, or the compiler's complaint about it
_LANES = re.compile(r"\[(\w+)\.s0\].{0,300}?\[\1\.s1\]|vec_type<\w+, \d+>::vec_type\(")
#: TVM's switch that keeps every loop serial (TileLang's vectorizer reads it too)
_NO_VECTORIZE = "tirx.disable_vectorize"


def _compile(source: tirx.PrimFunc, target: str, kw: dict) -> Any:
    """``tilelang.compile`` for the ``c`` target, through the narrow float path where
    the kernel has one; a kernel whose vectorized C code TileLang cannot print is
    compiled again with its loops serial (same values, see below)."""
    import tilelang

    configs = dict(kw.get("pass_configs") or {})
    retry = not configs.get(_NO_VECTORIZE)
    held = _Held()
    try:
        with _held_stderr(retry, held):
            narrow = narrow_dtypes(source)
            on_c = str(target).split()[0] == "c"
            if narrow - {"float16"} and not on_c:
                raise ValueError(f"compile_mesh_kernel: bfloat16/float8 kernels run on "
                                 f"target 'c' here, got target {target!r}")
            if narrow and on_c:
                return _compile_narrow(source, target, kw)
            return tilelang.compile(source, target=target, **kw)
    except Exception as e:  # noqa: BLE001 (TileLang wraps the compiler's error)
        if not retry or not _LANES.search(str(e) + held.text):
            sys.stderr.write(held.text)
            raise
        # A vector access at an offset TVM cannot prove aligned (a short T.copy from a
        # core- or data-dependent start) becomes a vector built from separate lanes,
        # which TileLang 0.1.15's C vec_type has no constructor for (stock
        # tilelang.compile fails too). Serial loops compute the same elements.
        configs[_NO_VECTORIZE] = True
        return _compile(source, target, {**kw, "pass_configs": configs})


class _Held:
    """What the C compiler wrote to the process's stderr while held."""
    text = ""


@contextlib.contextmanager
def _held_stderr(hold: bool, held: _Held) -> Iterator[None]:
    """Hold what is written to file descriptor 2 (the C compiler writes its errors
    there, outside Python) in ``held`` and pass it on afterwards, unless the block
    raised: the caller decides then (a compile that is retried must not show the
    first attempt's error)."""
    if not hold:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            held.text = f.read().decode(errors="replace")
            if held.text and not failed:
                sys.stderr.write(held.text)


def _bits_params(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """Each narrow float parameter becomes a parameter of its bits (``uint16``/``uint8``,
    which TileLang's host wrapper has a C type for) that the kernel's own buffer views:
    a let binds the buffer's data to the new parameter's."""
    from tvm import ir

    new_map, binds = dict(func.buffer_map), []
    for p, buf in func.buffer_map.items():
        fmt = FORMATS.get(str(buf.dtype))
        if fmt is None:
            continue
        data = tirx.Var(f"{buf.name}_bits", ir.PointerType(ir.PrimType(fmt.storage), "global"))
        new_map[p] = tirx.decl_buffer(buf.shape, fmt.storage, f"{buf.name}_bits", data=data,
                                      strides=buf.strides, elem_offset=buf.elem_offset)
        binds.append(tirx.Bind(buf.data, data))
    if not binds:
        return func
    return tirx.PrimFunc(func.params, tirx.SeqStmt(binds + [func.body]), func.ret_type,
                         new_map, func.attrs)


def _compile_narrow(source: tirx.PrimFunc, target: str, kw: dict) -> Any:
    """``tilelang.compile`` (the same kernel cache) with the narrow float lowering."""
    kw = dict(kw)
    cache, context = _narrow_context(target)
    source = _bits_params(source).with_attr("meshtensor.narrow_float",
                                            _narrow_float_version())
    out_idx = kw.pop("out_idx", None)
    return cache.cached(source, out_idx, backend_context=context,
                        verbose=bool(kw.pop("verbose", False)),
                        pass_configs=kw.pop("pass_configs", None),
                        compile_flags=kw.pop("compile_flags", None), **kw)


def _refuse_comm_ops(func_or_mod: Any) -> None:
    funcs = [func_or_mod] if isinstance(func_or_mod, tirx.PrimFunc) else \
        [f for f in getattr(func_or_mod, "functions", {}).values()
         if isinstance(f, tirx.PrimFunc)]
    for f in funcs:
        ops = find_comm_ops(f)
        if ops:
            raise ValueError(f"tilelang.compile: the kernel holds comm ops ({ops[0].name} "
                             f"first, {len(ops)} in all), which only run once lowered into "
                             f"supersteps: compile it with "
                             f"meshtensor.tilelang.compile_mesh_kernel(kernel) instead")


def guard_stock_compile() -> None:
    """Make TileLang's own compile (``tilelang.compile``, ``@tilelang.jit``) refuse a
    kernel that still holds comm ops with a ``ValueError`` naming the op and
    :func:`compile_mesh_kernel`, instead of failing deep in its pipeline on an
    unresolved ``tl.region`` call. Installed when ``meshtensor.tilelang`` is imported
    (once); kernels without comm ops compile exactly as before."""
    import importlib

    # the module, not the function `tilelang.engine.lower` that its package exports
    lower = importlib.import_module("tilelang.engine.lower")
    if getattr(lower.lower_with_context, "_meshtensor_guard", False):
        return
    stock = lower.lower_with_context

    def lower_with_context(func_or_mod: Any, *args: Any, **kw: Any) -> Any:
        _refuse_comm_ops(func_or_mod)
        return stock(func_or_mod, *args, **kw)

    lower_with_context.__doc__ = stock.__doc__
    lower_with_context._meshtensor_guard = True  # type: ignore[attr-defined]
    lower.lower_with_context = lower_with_context
