"""The pipeline that makes a mesh kernel run: the mesh passes, in order, then
``tilelang.compile``. ``compile_mesh_kernel`` is the one entry; :class:`MeshKernel` is
what it returns.

Pass order: ``VerifyMeshTensors`` (copies of annotated tensors stay in whole blocks and
one core's shard), then ``LowerMeshComm`` (comm ops become supersteps over the cores'
buffers, in one workspace argument), then TileLang's own pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
from tvm import tirx

from .analysis.verify import VerifyMeshTensors
from .ir.comm_op import find_comm_ops
from .ir.scope import find_calls
from .logs import quiet_tilelang
from .transform.lower_comm import WORKSPACE_ATTR, LowerMeshComm

__all__ = ["CPU_FLAGS", "MeshKernel", "compile_mesh_kernel"]

# gcc's -O3 loop vectoriser (dynamic cost model) turns the GEMM micro-kernel's k loop
# into slow gathers for power-of-two tiles (1.8 vs 45 GFLOP/s at 512^3, measured here);
# the very-cheap model keeps the SLP-vectorised, register-blocked body.
CPU_FLAGS = ["-O3", "-march=native", "-fvect-cost-model=very-cheap"]


@dataclass(frozen=True, eq=False)
class MeshKernel:
    """A compiled mesh kernel: call it like the ``JITKernel`` (same arguments).

    ``prim_func`` is the SOURCE PrimFunc (comm ops intact, for the analysis passes),
    ``lowered`` what :func:`LowerMeshComm` made of it, ``jit_kernel`` the compiled kernel.
    """

    prim_func: tirx.PrimFunc
    lowered: tirx.PrimFunc
    jit_kernel: Any
    workspace: Any = None  # the scratch array passed as the last argument, if any

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.workspace is None:
            return self.jit_kernel(*args, **kwargs)
        # one kernel call at a time: the cores' buffers live in this one array
        return self.jit_kernel(*args, self.workspace, **kwargs)

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
    kernel's own parameters). A kernel without comm ops compiles exactly as
    ``tilelang.compile`` would. TileLang's INFO lines are off while it compiles (see
    :func:`~meshtensor.tilelang.quiet_tilelang`).

    Example::

        kernel = compile_mesh_kernel(build_gemm("summa_comm", 64, 64, 64))
        kernel(a, b, c)          # torch tensors, as for the JITKernel
    """
    import tilelang

    if not isinstance(func, tirx.PrimFunc):
        raise TypeError(f"compile_mesh_kernel: expected a PrimFunc, got {type(func).__name__}")
    if "out_idx" in kw:
        kw["out_idx"] = _out_idx(kw["out_idx"], len(func.params))
    mod = VerifyMeshTensors()(tvm.IRModule({"main": func}))
    lowered = LowerMeshComm(workspace="argument")(mod)["main"]
    if str(target).split()[0] == "c" and find_calls(lowered, _is_loop_break):
        # TileLang 0.1.15's C code generator has no break: its error names no statement
        raise ValueError("compile_mesh_kernel: T.loop_break() cannot be compiled for target "
                         "'c' (TileLang's C code generator has no break); end the loop with "
                         "an `if` around its remaining work instead")
    if target == "c" and kw.get("compile_flags") is None:
        kw["compile_flags"] = list(CPU_FLAGS)
    with quiet_tilelang():
        if not find_comm_ops(func):
            return MeshKernel(func, lowered, tilelang.compile(func, target=target, **kw))
        # buffers filled only by exchanges look uninitialised to TileLang's check
        configs = dict(kw.pop("pass_configs", None) or {})
        configs.setdefault(tilelang.PassConfigKey.TL_DISABLE_BUFFER_INIT_CHECK, True)
        kw["pass_configs"] = configs
        jit = tilelang.compile(lowered, target=target, **kw)
    import torch
    nbytes = int(lowered.attrs[WORKSPACE_ATTR])
    device = "cuda" if str(target).startswith("cuda") else "cpu"
    return MeshKernel(func, lowered, jit, torch.empty(nbytes, dtype=torch.uint8, device=device))
