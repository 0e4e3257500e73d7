"""Communication ops inside TileLang mesh kernels: the tile-level twins of
:mod:`meshtensor.collectives`, on per-core buffers.

``mesh_comm(mesh_shape) -> MeshComm`` with ``.broadcast(src, dst, mesh_axes, root)``,
``.all_gather(src, dst, mesh_axes, gather_axis)``, ``.all_reduce(src, dst, mesh_axes,
reduction="sum")``, ``.reduce_scatter(src, dst, mesh_axes, scatter_axis,
reduction="sum")``, ``.all_to_all(src, dst, mesh_axes, split_axis, concat_axis)``,
``.shift(src, dst, mesh_axes, shift_axis, offset, rotate=False)``, ``.permute(src,
dst, pairs)``, ``.barrier(mesh_axes=None)`` and ``.mesh``. Each checks its arguments
and emits ONE statement where it is called inside a ``@T.prim_func`` kernel (in its
body, a ``T.macro`` or a plain Python helper), returning ``None``; outside a kernel
being built it returns the TIR call instead. The call spells out the typed record of
:mod:`..ir.comm_op`, which every pass reads back with ``find_comm_ops``.

Semantics. ``src``/``dst`` are per-core buffers (``T.alloc_shared`` / ``T.alloc_local``)
or static regions of them (``S[0:16, 0:8]``). With core ``d``'s ``src`` region as device
``d``'s local array, every core's ``dst`` receives exactly what the host collective
gives that device; a core that receives nothing (``shift`` without ``rotate``,
``permute``) leaves ``dst`` unchanged. Groups, in-group order, argument names and
checks are those of :mod:`meshtensor.collectives`. Tensor axes (``gather_axis``...) are
axes of the region. Region extents are static, so the ceil-rule pieces are static:
``dst`` must have the host result's shape for in-group position 0 (the largest piece);
a core whose piece is smaller gets its result in the leading part of ``dst`` (the rest
unchanged). ``src`` and ``dst`` share one dtype.

``compile_mesh_kernel`` lowers these statements (``LowerMeshComm``); a kernel that is
not lowered cannot run (``meshtensor_comm_*`` is no C function), so it is never
mis-executed.

>>> mc = mesh_comm({"row": 2, "col": 2})
>>> mc.mesh.shape
(2, 2)
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

import tilelang.language as T  # noqa: F401  (tilelang first: its bundled tvm)
from tilelang.language.utils import region as _tl_region
from tvm import tirx

from ...collectives import (check_tensor_axis, permute_sources, root_position,
                            shift_sources)
from ...mesh import Mesh, _is_int
from ...reduction import check_reduction
from ..ir.comm_op import encode, result_extents
from ..ir.expr import static_int
from .mesh_tensor import _as_mesh

__all__ = ["MeshComm", "mesh_comm"]

# What a core owns is decided by allocation (ir.memory), not by scope: any buffer the
# kernel allocates, fragments and T.alloc_buffer's "global" included, or a view of one.
# A kernel parameter is global memory; the passes refuse it as an operand, since only
# they see where a buffer was allocated.
def _per_core_scope(scope: str) -> bool:
    """Whether a buffer of ``scope`` can be on-chip memory (every scope but global)."""
    return scope != "global"


def kernel_param(buf: tirx.Buffer) -> bool:
    """Whether ``buf`` is (a view of) a parameter of the kernel being built: global
    memory. ``False`` outside a kernel being built (the passes check again)."""
    from tvm.script.ir_builder import IRBuilder

    # the frame class by name: importing TVM's tirx frame module again would register
    # its frame types a second time, under classes TileLang does not check against
    if not IRBuilder.is_in_scope():
        return False
    frames = [f for f in IRBuilder.current().frames if type(f).__name__ == "PrimFuncFrame"]
    return any(p.data.same_as(buf.data) for f in frames for p in f.buffer_map.values())


def _per_core(op: str, side: str, buf: tirx.Buffer) -> None:
    """Refuse a kernel parameter (``ValueError``): comm ops move per-core memory."""
    if kernel_param(buf):
        raise ValueError(f"{op}: {side} {buf.name!r} is a global-memory buffer (a kernel "
                         f"parameter); comm ops move per-core buffers, which the kernel "
                         f"allocates (T.alloc_shared, T.alloc_local, T.alloc_fragment, "
                         f"...): copy the tile into one first")


def _region(op: str, side: str, x: Any, check: Callable = _per_core
            ) -> tuple[tirx.Call, tuple[int, ...], tirx.Buffer]:
    """``x`` as a ``tl.region`` operand, with its static extents and buffer; ``check``
    refuses the memory a comm op may not move."""
    if isinstance(x, tirx.Buffer):
        buf, mins, exts = x, [tirx.IntImm("int32", 0)] * len(x.shape), list(x.shape)
    elif isinstance(x, tirx.BufferRegion):
        buf, mins, exts = x.buffer, [r.min for r in x.region], [r.extent for r in x.region]
    else:
        raise TypeError(f"{op}: {side} must be a per-core buffer or a region of one "
                        f"(S[0:16, 0:8]), got {type(x).__name__}")
    check(op, side, buf)
    static = tuple(static_int(e) for e in exts)
    if None in static:
        raise ValueError(f"{op}: {side} {buf.name!r} has symbolic extents "
                         f"{[str(e) for e in exts]}; comm regions need static extents")
    for d, (m, e, n) in enumerate(zip(mins, static, buf.shape)):
        mv, nv = static_int(m), static_int(n)
        if mv is not None and nv is not None and (mv < 0 or mv + e > nv):
            raise ValueError(f"{op}: {side} {buf.name!r}: region [{mv}, {mv + e}) runs "
                             f"outside dim {d} of size {nv}")
    access = "r" if side == "src" else "w"
    return _tl_region(tirx.BufferLoad(buf, mins), access, *exts), static, buf  # type: ignore


def _statement(call: tirx.Call) -> tirx.Call | None:
    """Emit ``call`` as a statement where the kernel calls the op (its body, a
    ``T.macro`` or a plain Python helper: a helper's unreturned call would otherwise be
    dropped, and the exchange with it) and return ``None``; outside a kernel being
    built, return the call (passes build ops this way)."""
    from tilelang.language.eager.builder import Builder
    builder = Builder.current()
    if builder is None:
        return call
    builder.eval(call)
    return None


class MeshComm:
    """The comm ops bound to one mesh (see the module docstring for semantics).

    >>> mc = mesh_comm({"x": 4, "y": 4})
    >>> mc.mesh.axis_names
    ('x', 'y')
    """

    def __init__(self, mesh: Mesh):
        self.mesh = mesh

    def __repr__(self) -> str:
        return f"MeshComm({self.mesh})"

    # every op funnels through here: checks shared, one statement out
    def _emit(self, name: str, src: Any, dst: Any, axes: tuple[int, ...],
              params: dict[str, Any]) -> tirx.Call | None:
        op = f"mesh_comm.{name}"
        s_call, s_ext, s_buf = _region(op, "src", src)
        d_call, d_ext, d_buf = _region(op, "dst", dst)
        if s_buf.dtype != d_buf.dtype:
            raise ValueError(f"{op}: src {s_buf.name!r} is {s_buf.dtype} but dst "
                             f"{d_buf.name!r} is {d_buf.dtype}; they must agree")
        ndim = len(s_ext)
        for key in ("gather_axis", "scatter_axis", "split_axis", "concat_axis"):
            if key in params:
                params[key] = check_tensor_axis(op, key, params[key], ndim)
        if len(d_ext) != ndim:
            raise ValueError(f"{op}: src region has rank {ndim}, dst region rank "
                             f"{len(d_ext)}")
        k = int(np.prod([self.mesh.shape[a] for a in axes], dtype=np.int64))
        want = result_extents(name, s_ext, k, params)
        if tuple(d_ext) != want:
            raise ValueError(f"{op}: dst {d_buf.name!r} has extents {tuple(d_ext)}, but src "
                             f"{s_buf.name!r} extents {tuple(s_ext)} over groups of {k} need "
                             f"{want}")
        return _statement(encode(name, self.mesh, axes, params, s_call, d_call))

    def _axes(self, name: str, mesh_axes: Any) -> tuple[int, ...]:
        return self.mesh.axes_indices(mesh_axes, what=f"mesh_comm.{name}")

    def broadcast(self, src: Any, dst: Any, mesh_axes: Any, root: Any) -> tirx.Call | None:
        """Every core of a group gets the root's ``src`` (``root``: in-group coordinates,
        ints or TIR expressions such as a loop variable)::

            mc.broadcast(A_own, A_row, ["y"], root=[k])   # row broadcast from column k
        """
        op = "mesh_comm.broadcast"
        axes = self._axes("broadcast", mesh_axes)
        r = (root,) if _is_int(root) or isinstance(root, tirx.PrimExpr) else tuple(root)
        if len(r) != len(axes):
            raise ValueError(f"{op}: root {list(r)} has {len(r)} coordinates, mesh_axes "
                             f"{list(axes)} needs {len(axes)}")
        static = [static_int(v) for v in r]
        for v, a in zip(static, axes):
            if v is not None:
                root_position(op, self.mesh, (a,), (v,))
        exprs = tuple(tirx.IntImm("int32", s) if s is not None else v
                      for v, s in zip(r, static))
        for e in exprs:
            if not isinstance(e, tirx.PrimExpr) or not e.dtype.startswith("int"):
                raise TypeError(f"{op}: root coordinates must be ints or integer TIR "
                                f"expressions, got {e!r}")
        return self._emit("broadcast", src, dst, axes, {"root": exprs})

    def all_gather(self, src: Any, dst: Any, mesh_axes: Any, gather_axis: int) -> tirx.Call | None:
        """Concatenate the group's ``src`` regions along ``gather_axis`` into every
        core's ``dst`` (``k`` times as long on that axis)."""
        return self._emit("all_gather", src, dst, self._axes("all_gather", mesh_axes),
                          {"gather_axis": gather_axis})

    def all_reduce(self, src: Any, dst: Any, mesh_axes: Any, reduction: str = "sum"
                   ) -> tirx.Call | None:
        """Element-wise ``reduction`` (sum/max/min/prod) of the group's ``src`` into every
        core's ``dst``, reduced in group order as the host does."""
        check_reduction("mesh_comm.all_reduce", reduction)
        return self._emit("all_reduce", src, dst, self._axes("all_reduce", mesh_axes),
                          {"reduction": reduction})

    def reduce_scatter(self, src: Any, dst: Any, mesh_axes: Any, scatter_axis: int,
                       reduction: str = "sum") -> tirx.Call | None:
        """Reduce the group's ``src`` and give piece ``p`` (ceil rule along
        ``scatter_axis``) to the group's ``p``-th core."""
        check_reduction("mesh_comm.reduce_scatter", reduction)
        return self._emit("reduce_scatter", src, dst, self._axes("reduce_scatter", mesh_axes),
                          {"scatter_axis": scatter_axis, "reduction": reduction})

    def all_to_all(self, src: Any, dst: Any, mesh_axes: Any, split_axis: int,
                   concat_axis: int) -> tirx.Call | None:
        """Core ``i`` sends piece ``j`` of ``src`` (ceil rule along ``split_axis``) to the
        group's ``j``-th core, which concatenates what it gets along ``concat_axis``."""
        return self._emit("all_to_all", src, dst, self._axes("all_to_all", mesh_axes),
                          {"split_axis": split_axis, "concat_axis": concat_axis})

    def shift(self, src: Any, dst: Any, mesh_axes: Any, shift_axis: Any, offset: int,
              rotate: bool = False) -> tirx.Call | None:
        """The core at coordinate ``c`` on ``shift_axis`` receives from ``c - offset``
        (wrapping with ``rotate``); cores without a source keep ``dst``."""
        op = "mesh_comm.shift"
        axes = self._axes("shift", mesh_axes)
        shift_sources(op, self.mesh, axes, shift_axis, offset, rotate)  # the checks
        return self._emit("shift", src, dst, axes,
                          {"shift_axis": self.mesh.axis_index(shift_axis, what=op),
                           "offset": int(offset), "rotate": bool(rotate)})

    def permute(self, src: Any, dst: Any, pairs: Any) -> tirx.Call | None:
        """Static point-to-point sends ``(source core, destination core)`` (coordinates
        or linear ids); a core that receives nothing keeps ``dst``."""
        src_of = permute_sources("mesh_comm.permute", self.mesh, pairs)
        return self._emit("permute", src, dst, tuple(range(self.mesh.ndim)),
                          {"pairs": tuple(sorted((s, d) for d, s in src_of.items()))})

    def barrier(self, mesh_axes: Any = None) -> tirx.Call | None:
        """Every core of a group along ``mesh_axes`` (all mesh axes by default) waits for
        the others: it ends a superstep. The lowering runs cores in bulk-synchronous
        supersteps, so every barrier synchronises all cores, a superset of what the
        groups ask; the analyses report the barrier with its own groups."""
        axes = tuple(range(self.mesh.ndim)) if mesh_axes is None else self._axes("barrier",
                                                                                 mesh_axes)
        return _statement(encode("barrier", self.mesh, axes, {}))


def mesh_comm(mesh_shape: Mapping[str, int] | str | Mesh | None = None) -> MeshComm:
    """The comm ops for one mesh (``{"x": 4, "y": 4}`` by default, a target name or a
    :class:`Mesh`), used inside ``@T.prim_func`` kernels::

        mc = mesh_comm({"x": 4, "y": 4})
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(4, 4, threads=1) as (bx, by):
                S = T.alloc_shared((16, 16), "float32")
                R = T.alloc_shared((16, 64), "float32", scope="shared")
                T.copy(A[bx * 16, by * 16], S)
                mc.all_gather(S, R, ["y"], gather_axis=1)
                T.copy(R, B[bx * 16, 0])
    """
    return MeshComm(_as_mesh({"x": 4, "y": 4} if mesh_shape is None else mesh_shape))
