"""Communication ops inside TileLang mesh kernels: the tile-level twins of
:mod:`meshtensor.collectives`, on per-core buffers.

Contract (stable; other modules code against it):

- ``mesh_comm(mesh_shape) -> MeshComm`` with ``.broadcast(src, dst, mesh_axes, root)``,
  ``.all_gather(src, dst, mesh_axes, gather_axis)``, ``.all_reduce(src, dst, mesh_axes,
  reduction="sum")``, ``.reduce_scatter(src, dst, mesh_axes, scatter_axis,
  reduction="sum")``, ``.all_to_all(src, dst, mesh_axes, split_axis, concat_axis)``,
  ``.shift(src, dst, mesh_axes, shift_axis, offset, rotate=False)``, ``.permute(src,
  dst, pairs)``, ``.barrier(mesh_axes=None)`` and ``.mesh``. Each returns ONE TIR call,
  used as a statement inside ``@T.prim_func`` (like ``mesh_tensor_copy``).
- ``find_comm_ops(func) -> list[CommOp]`` (PrimFunc, IRModule, JITKernel or MeshKernel),
  in program order, with their scope (as :func:`copies.find_calls`).
- ``comm_flows(op, root=None) -> (sender, receiver, nbytes)``: int64 arrays of linear
  core ids and bytes, what one execution of the op sends between distinct cores.

Semantics. ``src``/``dst`` are per-core buffers (``T.alloc_shared``/``alloc_local``/
``alloc_fragment``) or static regions of them (``S[0:16, 0:8]``). With core ``d``'s
``src`` region as device ``d``'s local array, every core's ``dst`` receives exactly what
the host collective gives that device; a core that receives nothing (``shift`` without
``rotate``, ``permute``) leaves ``dst`` unchanged. Groups, in-group order, argument
names and checks are those of :mod:`meshtensor.collectives`. Tensor axes
(``gather_axis``...) are axes of the region. Region extents are static, so the ceil-rule
pieces are static: ``dst`` must have the host result's shape for in-group position 0
(the largest piece); a core whose piece is smaller gets its result in the leading part
of ``dst`` (the rest unchanged). ``src`` and ``dst`` share one dtype.

TIR form. Each op is ``T.evaluate(T.call_extern("handle", "meshtensor_comm_<op>", params,
src, dst, *root))``:

- ``params``: a JSON string ``{"op", "mesh": {name: size}, "mesh_axes": [int...],
  "params": {...}}`` with the static parameters (``gather_axis``, ``scatter_axis``,
  ``split_axis``, ``concat_axis``, ``shift_axis`` (mesh axis index), ``offset``,
  ``rotate``, ``reduction``, ``pairs`` as ``[[src_linear, dst_linear], ...]``);
- ``src``/``dst``: ``tl.region`` operands as ``T.copy`` has them (absent for barrier);
- ``root``: broadcast only, one expression per mesh axis (ints or loop variables).

``LowerMeshComm`` (:mod:`.lower`) replaces these calls with exchanges; a kernel that is
not lowered fails to compile (``meshtensor_comm_*`` is no C function), so it is never
mis-executed.

>>> mc = mesh_comm({"x": 2, "y": 2})
>>> mc.mesh.shape
(2, 2)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
import tilelang.language as T
from tilelang.language.utils import region as _tl_region
from tvm import tirx
from tvm.runtime import DataType

from ..collectives import (check_tensor_axis, permute_sources, root_position,
                           shift_sources)
from ..mesh import Mesh, _is_int
from ..reduction import check_reduction
from ..sharding import chunk_bounds
from .copies import CopyRegion, Found, find_calls, region_of
from .frontend import _as_mesh, _prim_func_of, _static

COMM_OPS = ("broadcast", "all_gather", "all_reduce", "reduce_scatter", "all_to_all",
            "shift", "permute", "barrier")
EXTERN_PREFIX = "meshtensor_comm_"

__all__ = ["COMM_OPS", "MeshComm", "CommOp", "mesh_comm", "find_comm_ops", "comm_flows"]


# -- building the statement ------------------------------------------------------------
def _region(op: str, side: str, x: Any) -> tuple[tirx.Call, tuple[int, ...], tirx.Buffer]:
    """``x`` as a ``tl.region`` operand, with its static extents and buffer."""
    if isinstance(x, tirx.Buffer):
        buf, mins, exts = x, [tirx.IntImm("int32", 0)] * len(x.shape), list(x.shape)
    elif isinstance(x, tirx.BufferRegion):
        buf, mins, exts = x.buffer, [r.min for r in x.region], [r.extent for r in x.region]
    else:
        raise TypeError(f"{op}: {side} must be a per-core buffer or a region of one "
                        f"(S[0:16, 0:8]), got {type(x).__name__}")
    scope = buf.scope()
    if scope == "global":
        raise ValueError(f"{op}: {side} {buf.name!r} is a global-memory buffer (scope "
                         f"'global', e.g. a kernel parameter); comm ops move per-core "
                         f"buffers (T.alloc_shared / T.alloc_local / T.alloc_fragment)")
    static = tuple(_static(e) for e in exts)
    if None in static:
        raise ValueError(f"{op}: {side} {buf.name!r} has symbolic extents "
                         f"{[str(e) for e in exts]}; comm regions need static extents")
    for d, (m, e, n) in enumerate(zip(mins, static, buf.shape)):
        mv, nv = _static(m), _static(n)
        if mv is not None and nv is not None and (mv < 0 or mv + e > nv):
            raise ValueError(f"{op}: {side} {buf.name!r}: region [{mv}, {mv + e}) runs "
                             f"outside dim {d} of size {nv}")
    access = "r" if side == "src" else "w"
    return _tl_region(tirx.BufferLoad(buf, mins), access, *exts), static, buf


def result_extents(op: str, src: Sequence[int], k: int, params: Mapping[str, Any]
                   ) -> tuple[int, ...]:
    """The shape the host collective gives in-group position 0 (the largest result)
    for a ``src`` region of extents ``src`` in groups of ``k``."""
    out = list(src)
    if op == "all_gather":
        out[params["gather_axis"]] *= k
    elif op == "reduce_scatter":
        ax = params["scatter_axis"]
        out[ax] = int(np.diff(chunk_bounds(src[ax], k))[0])
    elif op == "all_to_all":
        sa, ca = params["split_axis"], params["concat_axis"]
        piece = int(np.diff(chunk_bounds(src[sa], k))[0])
        out[sa] = piece
        out[ca] = k * (piece if sa == ca else src[ca])
    return tuple(out)


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
              params: dict[str, Any], root: tuple = ()) -> tirx.Call:
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
        text = json.dumps({"op": name, "mesh": self.mesh.as_dict, "mesh_axes": list(axes),
                           "params": params}, sort_keys=True)
        return T.call_extern("handle", EXTERN_PREFIX + name, text, s_call, d_call, *root)

    def _axes(self, name: str, mesh_axes: Any) -> tuple[int, ...]:
        return self.mesh.axes_indices(mesh_axes, what=f"mesh_comm.{name}")

    def broadcast(self, src: Any, dst: Any, mesh_axes: Any, root: Any) -> tirx.Call:
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
        static = [_static(v) for v in r]
        for v, a in zip(static, axes):
            if v is not None:
                root_position(op, self.mesh, (a,), (v,))
        exprs = tuple(tirx.IntImm("int32", s) if s is not None else v
                      for v, s in zip(r, static))
        for e in exprs:
            if not isinstance(e, tirx.PrimExpr) or not e.dtype.startswith("int"):
                raise TypeError(f"{op}: root coordinates must be ints or integer TIR "
                                f"expressions, got {e!r}")
        return self._emit("broadcast", src, dst, axes, {}, exprs)

    def all_gather(self, src: Any, dst: Any, mesh_axes: Any, gather_axis: int) -> tirx.Call:
        """Concatenate the group's ``src`` regions along ``gather_axis`` into every
        core's ``dst`` (``k`` times as long on that axis)."""
        return self._emit("all_gather", src, dst, self._axes("all_gather", mesh_axes),
                          {"gather_axis": gather_axis})

    def all_reduce(self, src: Any, dst: Any, mesh_axes: Any, reduction: str = "sum"
                   ) -> tirx.Call:
        """Element-wise ``reduction`` (sum/max/min/prod) of the group's ``src`` into every
        core's ``dst``, reduced in group order as the host does."""
        check_reduction("mesh_comm.all_reduce", reduction)
        return self._emit("all_reduce", src, dst, self._axes("all_reduce", mesh_axes),
                          {"reduction": reduction})

    def reduce_scatter(self, src: Any, dst: Any, mesh_axes: Any, scatter_axis: int,
                       reduction: str = "sum") -> tirx.Call:
        """Reduce the group's ``src`` and give piece ``p`` (ceil rule along
        ``scatter_axis``) to the group's ``p``-th core."""
        check_reduction("mesh_comm.reduce_scatter", reduction)
        return self._emit("reduce_scatter", src, dst, self._axes("reduce_scatter", mesh_axes),
                          {"scatter_axis": scatter_axis, "reduction": reduction})

    def all_to_all(self, src: Any, dst: Any, mesh_axes: Any, split_axis: int,
                   concat_axis: int) -> tirx.Call:
        """Core ``i`` sends piece ``j`` of ``src`` (ceil rule along ``split_axis``) to the
        group's ``j``-th core, which concatenates what it gets along ``concat_axis``."""
        return self._emit("all_to_all", src, dst, self._axes("all_to_all", mesh_axes),
                          {"split_axis": split_axis, "concat_axis": concat_axis})

    def shift(self, src: Any, dst: Any, mesh_axes: Any, shift_axis: Any, offset: int,
              rotate: bool = False) -> tirx.Call:
        """The core at coordinate ``c`` on ``shift_axis`` receives from ``c - offset``
        (wrapping with ``rotate``); cores without a source keep ``dst``."""
        op = "mesh_comm.shift"
        axes = self._axes("shift", mesh_axes)
        shift_sources(op, self.mesh, axes, shift_axis, offset, rotate)  # the checks
        return self._emit("shift", src, dst, axes,
                          {"shift_axis": self.mesh.axis_index(shift_axis, what=op),
                           "offset": int(offset), "rotate": bool(rotate)})

    def permute(self, src: Any, dst: Any, pairs: Any) -> tirx.Call:
        """Static point-to-point sends ``(source core, destination core)`` (coordinates
        or linear ids); a core that receives nothing keeps ``dst``."""
        src_of = permute_sources("mesh_comm.permute", self.mesh, pairs)
        return self._emit("permute", src, dst, tuple(range(self.mesh.ndim)),
                          {"pairs": sorted([s, d] for d, s in src_of.items())})

    def barrier(self, mesh_axes: Any = None) -> tirx.Call:
        """Every core waits for the others (all mesh axes by default): ends a superstep."""
        axes = tuple(range(self.mesh.ndim)) if mesh_axes is None else self._axes("barrier",
                                                                                 mesh_axes)
        text = json.dumps({"op": "barrier", "mesh": self.mesh.as_dict,
                           "mesh_axes": list(axes), "params": {}}, sort_keys=True)
        return T.call_extern("handle", EXTERN_PREFIX + "barrier", text)


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


# -- reading them back -----------------------------------------------------------------
@dataclass(frozen=True)
class CommOp(Found):
    """A comm op found in a kernel (see :func:`find_comm_ops`), with its scope (loops incl.
    launch loops, lets, conditions; see :class:`copies.Found`)."""

    index: int = 0
    op: str = ""
    mesh: Mesh = None  # type: ignore[assignment]
    src: CopyRegion | None = None
    dst: CopyRegion | None = None
    mesh_axes: tuple[int, ...] = ()
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    root: tuple[tirx.PrimExpr, ...] | None = None

    def static_extents(self, side: str = "src") -> tuple[int, ...]:
        """The region's extents as ints (``side`` is ``"src"`` or ``"dst"``)."""
        r = self.src if side == "src" else self.dst
        return tuple(int(_static(e)) for e in r.extents)

    @property
    def dtype(self) -> str:
        return str(self.src.buffer.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of one core's ``src`` region."""
        return region_bytes(self.src)


def region_bytes(r: CopyRegion) -> int:
    """Bytes of a static region."""
    t = DataType(str(r.buffer.dtype))
    return int(np.prod([int(_static(e)) for e in r.extents], dtype=np.int64)) * \
        (t.bits * t.lanes // 8)


def is_comm_call(call: tirx.Call) -> bool:
    """Whether ``call`` is a comm op's ``call_extern``."""
    if getattr(call.op, "name", None) != "tirx.call_extern" or not call.args:
        return False
    name = call.args[0]
    return isinstance(name, tirx.StringImm) and name.value.startswith(EXTERN_PREFIX)


def _prim_func(func: Any) -> tirx.PrimFunc:
    """The kernel's PrimFunc: a module's one function with comm ops (or its only one);
    otherwise as :func:`read_mesh_tensor_info` resolves it (``.prim_func`` of a
    ``JITKernel`` or ``MeshKernel``: the source)."""
    funcs = getattr(func, "functions", None)
    if funcs is None:
        return _prim_func_of(func)
    prims = [f for f in funcs.values() if isinstance(f, tirx.PrimFunc)]
    pick = [f for f in prims if find_calls(f, is_comm_call)] or prims
    if len(pick) != 1:
        raise ValueError(f"find_comm_ops: module has {len(pick)} candidate functions; pass "
                         f"one PrimFunc")
    return pick[0]


def decode(found: Found, index: int = 0) -> CommOp:
    """The :class:`CommOp` of a comm call found by :func:`find_calls`."""
    args = found.call.args
    name = args[0].value[len(EXTERN_PREFIX):]
    meta = json.loads(args[1].value)
    mesh = Mesh(meta["mesh"])
    params = dict(meta["params"])
    if "pairs" in params:
        params["pairs"] = tuple(tuple(p) for p in params["pairs"])
    src = dst = root = None
    if name != "barrier":
        src, dst = region_of(args[2]), region_of(args[3])
    if name == "broadcast":
        root = tuple(args[4:])
    return CommOp(found.call, found.scope, index=index, op=name, mesh=mesh, src=src, dst=dst,
                  mesh_axes=tuple(meta["mesh_axes"]), params=MappingProxyType(params),
                  root=root)


def find_comm_ops(func: Any) -> list[CommOp]:
    """Every comm op of a kernel in program order (``index`` counts them), with scope.

    Accepts a PrimFunc, an IRModule, a ``JITKernel`` or a ``MeshKernel`` (its source).

    >>> import tilelang.language as T
    >>> mc = mesh_comm({"x": 2, "y": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_shared((4,), "float32")
    ...         for s in T.serial(2):
    ...             mc.shift(S, S, ["x"], "x", 1, rotate=True)
    >>> [(o.index, o.op, o.mesh_axes, dict(o.params)["offset"]) for o in find_comm_ops(k)]
    [(0, 'shift', (0,), 1)]
    """
    return [decode(f, i) for i, f in enumerate(find_calls(_prim_func(func), is_comm_call))]


# -- what one execution sends ------------------------------------------------------------
def _piece_sizes(n: int, k: int) -> np.ndarray:
    return np.diff(chunk_bounds(n, k))


_Flow = tuple[np.ndarray, np.ndarray, np.ndarray]


def _flows(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> _Flow:
    """Drop self-sends and empty pieces; int64 arrays."""
    src, dst = np.broadcast_arrays(np.asarray(src, np.int64), np.asarray(dst, np.int64))
    nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), src.shape).ravel()
    src, dst = src.ravel(), dst.ravel()
    keep = (src != dst) & (nbytes > 0)
    return src[keep], dst[keep], nbytes[keep].copy()


def _exchange(groups: np.ndarray, piece_bytes: np.ndarray) -> _Flow:
    """Member ``i`` of each group sends ``piece_bytes[..., i, j]`` to member ``j``."""
    G, k = groups.shape
    src = np.broadcast_to(groups[:, :, None], (G, k, k))
    dst = np.broadcast_to(groups[:, None, :], (G, k, k))
    return _flows(src, dst, np.broadcast_to(piece_bytes, (G, k, k)))


def comm_flows(op: CommOp, root: Sequence[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sender, receiver, nbytes)``: what one execution of ``op`` sends between distinct
    cores (linear ids; a core's data to itself excluded), with the conventions of
    :mod:`meshtensor.cost` (direct one-shot collectives; ``all_reduce`` = reduce_scatter
    + all_gather over the flattened region). ``root``: concrete in-group coordinates for
    a broadcast whose root is not static. Barrier: no flows.

    >>> import tilelang.language as T
    >>> mc = mesh_comm({"x": 2, "y": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_shared((4,), "float32")
    ...         mc.broadcast(S, S, ["y"], root=[0])
    >>> [a.tolist() for a in comm_flows(find_comm_ops(k)[0])]
    [[0, 2], [1, 3], [16, 16]]
    """
    if op.op == "barrier":
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy()
    mesh, axes = op.mesh, tuple(op.mesh_axes)
    groups = mesh.group_array(axes)
    G, k = groups.shape
    nbytes = region_bytes(op.src)
    ext = op.static_extents("src")
    itemsize = nbytes // max(int(np.prod(ext, dtype=np.int64)), 1)
    what = f"comm_flows({op.op})"
    if op.op == "broadcast":
        if root is None:
            vals = [_static(r) for r in op.root]
            if None in vals:
                raise ValueError(f"{what}: root {[str(r) for r in op.root]} is not static; "
                                 f"pass root= as in-group coordinates")
            root = vals
        r = root_position(what, mesh, axes, root)
        return _flows(np.broadcast_to(groups[:, r:r + 1], (G, k)), groups, nbytes)
    if op.op == "all_gather":
        return _exchange(groups, np.int64(nbytes))
    if op.op in ("reduce_scatter", "all_to_all"):
        ax = op.params["scatter_axis" if op.op == "reduce_scatter" else "split_axis"]
        piece = _piece_sizes(ext[ax], k) * (nbytes // max(ext[ax], 1))
        return _exchange(groups, piece[None, None, :])
    if op.op == "all_reduce":
        p = _piece_sizes(int(np.prod(ext, dtype=np.int64)), k) * itemsize
        return _exchange(groups, p[None, None, :] + p[None, :, None])
    if op.op == "shift":
        src, valid = shift_sources(what, mesh, axes, op.params["shift_axis"],
                                   op.params["offset"], op.params["rotate"])
        ids = np.arange(mesh.size, dtype=np.int64)
        return _flows(src[valid], ids[valid], nbytes)
    if op.op == "permute":
        pairs = np.asarray(op.params["pairs"], dtype=np.int64).reshape(-1, 2)
        return _flows(pairs[:, 0], pairs[:, 1], nbytes)
    raise ValueError(f"comm_flows: unknown comm op {op.op!r}")
