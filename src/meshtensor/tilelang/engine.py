"""The pipeline that makes a mesh kernel run: the mesh passes, in order, then
``tilelang.compile``. ``compile_mesh_kernel`` is the one entry; :class:`MeshKernel` is
what it returns.

Pass order: ``PrepareTilelangMesh`` (a kernel written for Tilelang-Mesh: its
``T.MeshTensor`` parameters become per-core stacks, its on-chip buffers core-private
memory; any other kernel is unchanged), ``VerifyMeshTensors`` (copies of annotated
tensors stay in whole blocks and one core's shard), then ``LowerMeshComm`` (comm ops
become supersteps over the cores' buffers, in one workspace argument), ``SelectMinMax``
on target ``c`` (min/max of loaded values as selects: TVM's C code generator reuses such
an operand across a store), then TileLang's own pipeline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tvm
from tvm import tirx

from .analysis.verify import VerifyMeshTensors
from .c_header import header_flags
from .ir.comm_op import find_comm_ops
from .ir.scope import find_calls
from .logs import quiet_tilelang
from .transform.lower_comm import WORKSPACE_ATTR, LowerMeshComm
from .transform.select_min_max import select_min_max
from .transform.tilelang_mesh import prepare_tilelang_mesh

__all__ = ["CPU_FLAGS", "MeshKernel", "compile_mesh_kernel", "guard_stock_compile"]

# gcc's -O3 loop vectoriser (dynamic cost model) turns the GEMM micro-kernel's k loop
# into slow gathers for power-of-two tiles (1.8 vs 45 GFLOP/s at 512^3, measured here);
# the very-cheap model keeps the SLP-vectorised, register-blocked body.
# TileLang's C code type-puns (a buffer written through float4*, read through float2*;
# the lowering's per-core copies are views into one byte workspace), which -O3's
# type-based alias analysis may reorder: -fno-strict-aliasing. gcc 12's loop
# distribution into memset/memcpy patterns reorders stores of a core loop that mixes
# scalar and vector-struct stores into the workspace (found by the kernel fuzzer, kept
# as reproducers in tests): -fno-tree-loop-distribute-patterns.
CPU_FLAGS = ["-O3", "-march=native", "-fvect-cost-model=very-cheap", "-fno-strict-aliasing",
             "-fno-tree-loop-distribute-patterns"]


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
    workspace: Any = None  # the scratch array passed as the last argument, if any
    mesh_tensors: tuple = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.mesh_tensors:
            return self._call_global(args, kwargs)
        return self._run(*args, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        if self.workspace is None:
            return self.jit_kernel(*args, **kwargs)
        # one kernel call at a time: the cores' buffers live in this one array
        return self.jit_kernel(*args, self.workspace, **kwargs)

    def _call_global(self, args: tuple, kwargs: dict) -> Any:
        n = len(self.prim_func.params)
        if len(args) != n or kwargs:
            raise ValueError(f"MeshKernel: the kernel takes {n} positional arguments (global "
                             f"tensors for its T.MeshTensor parameters), got {len(args)}"
                             f"{' and keywords ' + str(sorted(kwargs)) if kwargs else ''}")
        stacks = {}
        for i, p, _ in self.mesh_tensors:
            p.check(args[i], i)
            stacks[i] = p.scatter(args[i])
        out = self._run(*[stacks.get(i, a) for i, a in enumerate(args)])
        for i, p, written in self.mesh_tensors:
            if written:
                p.gather(stacks[i], args[i])
        return out

    def get_kernel_source(self) -> str:
        return self.jit_kernel.get_kernel_source()


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


def compile_mesh_kernel(func: tirx.PrimFunc, target: str = "c", **kw: Any) -> MeshKernel:
    """Check (``VerifyMeshTensors``), lower the comm ops (``LowerMeshComm``) and
    ``tilelang.compile`` a mesh kernel; ``kw`` goes to ``tilelang.compile``
    (``compile_flags`` defaults to :data:`CPU_FLAGS` on ``"c"``; ``out_idx`` counts the
    kernel's own parameters). A kernel without comm ops compiles as ``tilelang.compile``
    would, but for target ``"c"`` its ``min``/``max`` of loaded values become selects
    (``SelectMinMax``: TVM's C code generator reuses such an operand across a store).
    On ``"c"`` with g++, TileLang's C header is read precompiled (see
    :mod:`~meshtensor.tilelang.c_header`). TileLang's INFO lines are off while it
    compiles (see
    :func:`~meshtensor.tilelang.quiet_tilelang`).

    Example::

        kernel = compile_mesh_kernel(build_gemm("summa_comm", 64, 64, 64))
        kernel(a, b, c)          # torch tensors, as for the JITKernel
    """
    import tilelang

    if not isinstance(func, tirx.PrimFunc):
        raise TypeError(f"compile_mesh_kernel: expected a PrimFunc, got {type(func).__name__}")
    check_races = kw.pop("check_races", None)
    from .transform.lower_dist import has_dist_ops
    if has_dist_ops(func):  # a T.dist kernel: every rank of the world (runtime.dist_kernel)
        return _compile_dist(func, target, bool(check_races), kw)
    prepared = prepare_tilelang_mesh(func)
    if prepared.params and kw.get("out_idx") is not None:
        raise ValueError("compile_mesh_kernel: out_idx is not supported for a kernel with "
                         "T.MeshTensor parameters; pass the global output tensors instead")
    if "out_idx" in kw:
        kw["out_idx"] = _out_idx(kw["out_idx"], len(func.params))
    work = prepared.func
    mod = VerifyMeshTensors()(tvm.IRModule({"main": work}))
    lowered = LowerMeshComm(workspace="argument")(mod)["main"]
    on_c = str(target).split()[0] == "c"
    if on_c and find_calls(lowered, _is_loop_break):
        # TileLang 0.1.15's C code generator has no break: its error names no statement
        raise ValueError("compile_mesh_kernel: T.loop_break() cannot be compiled for target "
                         "'c' (TileLang's C code generator has no break); end the loop with "
                         "an `if` around its remaining work instead")
    if target == "c" and kw.get("compile_flags") is None:
        kw["compile_flags"] = list(CPU_FLAGS)
    if on_c:  # TileLang's C header, precompiled once per flag set: 1.5 s less a kernel
        flags = kw.get("compile_flags") or []
        flags = [flags] if isinstance(flags, str) else list(flags)
        kw["compile_flags"] = flags + header_flags(flags)
    # TVM's C code generator reuses a min/max operand's load across a store
    source = select_min_max(lowered) if on_c else lowered
    with quiet_tilelang():
        if not find_comm_ops(work):
            return MeshKernel(func, lowered, _compile(source, target, kw),
                              mesh_tensors=prepared.params)
        # buffers filled only by exchanges look uninitialised to TileLang's check
        configs = dict(kw.pop("pass_configs", None) or {})
        configs.setdefault(tilelang.PassConfigKey.TL_DISABLE_BUFFER_INIT_CHECK, True)
        kw["pass_configs"] = configs
        jit = _compile(source, target, kw)
    import torch
    nbytes = int(lowered.attrs[WORKSPACE_ATTR])
    device = "cuda" if str(target).startswith("cuda") else "cpu"
    return MeshKernel(func, lowered, jit, torch.empty(nbytes, dtype=torch.uint8, device=device),
                      prepared.params)


def _compile_dist(func: tirx.PrimFunc, target: str, check_races: bool, kw: dict) -> Any:
    """A ``T.dist`` kernel: lowered to one per-rank program (``LowerDist``), compiled
    as a mesh kernel, run by :class:`~.runtime.dist_kernel.DistKernel`."""
    from .runtime import shim
    from .runtime.dist_kernel import DistKernel
    from .transform.lower_dist import lower_dist
    if str(target).split()[0] != "c":
        raise ValueError(f"compile_mesh_kernel: T.dist kernels run on target 'c' (the "
                         f"emulator), got {target!r}")
    if kw.get("out_idx") is not None:
        raise ValueError("compile_mesh_kernel: out_idx is not supported for a T.dist kernel; "
                         "pass the global output tensors instead")
    lowered, program = lower_dist(func)
    shim.load()  # the runtime's C entry points, before the kernel's library is loaded
    return DistKernel(func, lowered, program, compile_mesh_kernel(lowered, target, **kw),
                      check_races, _rebuild_dist)


def _rebuild_dist(text: str, regs: list, check_races: bool) -> Any:
    """A pickled :class:`~.runtime.dist_kernel.DistKernel` compiled again from its
    source (TVM JSON) and ``T.MeshTensor`` records (a rank process does this)."""
    func = tvm.ir.load_json(text)
    if regs:
        from .ir.mesh_param import register
        for i, p in regs:
            register(func.buffer_map[func.params[i]], p)
    return compile_mesh_kernel(func, check_races=check_races)


#: a gather in TileLang's C source: a vector of loads at the lanes of an index vector
_GATHER = re.compile(r"\(\w+\[(\w+)\.s0\],\s*\w+\[\1\.s1\]")


def _compile(source: tirx.PrimFunc, target: str, kw: dict) -> Any:
    """``tilelang.compile``, with the one C compile error of TileLang 0.1.15's ``c``
    target that valid kernels reach as a ``ValueError`` that says what to change."""
    import tilelang

    try:
        return tilelang.compile(source, target=target, **kw)
    except Exception as e:  # noqa: BLE001 (TileLang wraps the compiler's error)
        text = str(e)  # TileLang's message holds the C source, not the compiler's error
        hit = _GATHER.search(text) if text.startswith("Compilation Failed") else None
        if hit is None:
            raise
        # a vector access at an offset TVM cannot prove aligned becomes a gather whose
        # lanes TileLang's vec_type has no constructor for (stock tilelang.compile too)
        line = next((ln for ln in text.splitlines() if hit.group(0) in ln), "")
        raise ValueError(
            "compile_mesh_kernel: TileLang's C back end cannot compile a vectorized copy "
            "or loop whose start it cannot prove aligned (a T.copy of a few elements "
            "from an offset that depends on the core or on data, here); it builds a "
            "vector from separate lanes, which its vec_type cannot. Copy element by "
            "element in a T.serial loop, or make the start a multiple of the copy's "
            f"width. The C line: {line.strip()[:300]}") from None


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
