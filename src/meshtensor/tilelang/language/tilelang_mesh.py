"""Kernels written for Tilelang-Mesh (the SUNMMIO fork of TileLang) on stock TileLang.

``enable(mesh=(nrows, ncols))`` installs the fork's names on ``tilelang.language``
where they are absent: ``T.comm`` (``broadcast``, ``put``, ``all_gather``,
``all_reduce``, ``barrier``, ``fence``, ``current_core``, ``CoreId``,
``core_tuple_to_id``, ``core_id_to_tuple``, ``get_target_mesh_shape``),
``T.MeshTensor``, ``T.MeshShardingPolicy`` and ``T.MeshReplicationType``; also
``get_sunmmio_device_mesh_config`` on ``tilelang.carver.arch.driver`` and the
fork's layout makers (``make_zz_layout`` ...) on ``tilelang.layout``. A kernel written
for the fork then parses unchanged, and ``compile_mesh_kernel`` runs it (global torch
tensors in).

The model (as the fork defines it): a mesh of ``nrows x ncols`` cores; core ``(row,
col)`` has linear id ``row * ncols + col``; ``T.Kernel(nrows * ncols)`` runs one block
per core (block id = core id). Each ``T.comm`` op becomes ONE comm-op statement of
:mod:`..ir.comm_op` (``tm_broadcast``, ``tm_put``, ``tm_all_gather``,
``tm_all_reduce``; ``barrier`` is ours), lowered by ``LowerMeshComm`` and counted by
``analyze_mesh_communication`` like every comm op. Every check the fork makes with
``assert`` is a ``ValueError`` here, with the fork's condition and text.

Mesh axes are named ``row`` (axis 0) and ``col`` (axis 1): the fork's ``y`` splits
over rows, its ``x`` over columns.

>>> import tilelang.language as T
>>> mesh = enable(mesh=(2, 2))
>>> T.MeshShardingPolicy(y=0, x=1).to_sharding(mesh, 2).spec()
[['row'], ['col']]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import tilelang  # noqa: F401  (first: its bundled tvm)
import tilelang.language as T
from tvm import arith, tirx

from ...mesh import Mesh, _is_int
from ...sharding import Sharding
from ..ir.comm_op import encode
from ..ir.evaluate import static_int
from ..ir.mesh_param import MeshParam, register, registered
from .comm import _per_core_scope, _statement
from .comm import _region as _comm_region

__all__ = ["enable", "enabled_mesh", "world", "MeshReplicationType", "MeshShardingPolicy",
           "MeshTensor", "comm", "DIRECTION_MAP", "REDUCE_TYPE_LIST", "FORK_NAMES",
           "UNSUPPORTED", "ForkLayout"]

DIRECTION_MAP = {"horizontal": 0, "h": 0, "vertical": 1, "v": 1, "all": 2, "a": 2}
REDUCE_TYPE_LIST = ("sum", "abssum", "max", "min", "absmax", "bitand", "bitor", "bitxor")
#: the names enable() puts on tilelang.language
FORK_NAMES = ("comm", "MeshTensor", "MeshShardingPolicy", "MeshReplicationType", "dist")
#: Tilelang-Mesh names the emulator does not provide (their errors say so)
UNSUPPORTED = ("Tiles", "annotate_tileview", "dma_load", "dma_store", "mesh_nrows",
               "mesh_ncols", "mesh_ncores", "placement", "TensorWithMeta")
AXES = ("row", "col")
_DIR_AXES = {0: (1,), 1: (0,), 2: (0, 1)}  # h: along a row (col varies), v, all


class _State:
    mesh: Mesh | None = None


_STATE = _State()


def enabled_mesh() -> Mesh:
    """The mesh set by :func:`enable`; ``ValueError`` saying to call it otherwise."""
    if _STATE.mesh is None:
        raise ValueError("Tilelang-Mesh names need a mesh: call `from meshtensor.tilelang "
                         "import tilelang_mesh as tm; tm.enable(mesh=(nrows, ncols))` first")
    return _STATE.mesh


def _mesh_of(config: Any, what: str) -> Mesh:
    try:
        nrows, ncols = config
    except (TypeError, ValueError):
        raise ValueError(f"{what}: the mesh must be (nrows, ncols), got {config!r}") from None
    for name, v in (("nrows", nrows), ("ncols", ncols)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
    return Mesh({AXES[0]: int(nrows), AXES[1]: int(ncols)})


# -- MeshReplicationType, MeshShardingPolicy ------------------------------------------------
class MeshReplicationType(enum.Enum):
    """Which cores hold copies: ``NONE`` (no replication), ``ROW`` (the cores of a row
    hold the same data; only ``y`` may split), ``COLUMN`` (the cores of a column; only
    ``x``), ``ALL`` (every core holds the whole tensor)."""

    NONE = 0
    ROW = 1
    COLUMN = 2
    ALL = 3


@dataclass(frozen=True, init=False)
class MeshShardingPolicy:
    """How a ``T.MeshTensor`` lies on the mesh (the fork's policy):

    - ``x=d``: dim ``d`` split over the columns (part = the core's column);
    - ``y=d``: dim ``d`` split over the rows (part = the core's row);
    - ``cross_mesh_dim=d``: dim ``d`` split over all cores in linear-id order;
    - ``replicate``: a :class:`MeshReplicationType`.

    Parts follow the ceil rule (part ``p`` of ``n`` over ``k``: ``[p * ceil(n/k),
    min((p + 1) * ceil(n/k), n))``). :meth:`to_sharding` gives the
    :class:`meshtensor.Sharding`, :meth:`from_sharding` the way back.

    >>> MeshShardingPolicy(y=0, x=1)
    MeshShardingPolicy(x=1, y=0)
    >>> MeshShardingPolicy(cross_mesh_dim=0, x=1)
    Traceback (most recent call last):
    ...
    ValueError: cross_mesh_dim is mutually exclusive with x/y splits
    """

    x: int | None
    y: int | None
    replicate: MeshReplicationType
    cross_mesh_dim: int | None

    def __init__(self, x: int | None = None, y: int | None = None,
                 replicate: MeshReplicationType = MeshReplicationType.NONE,
                 cross_mesh_dim: int | None = None):
        for name, v in (("x", x), ("y", y), ("cross_mesh_dim", cross_mesh_dim)):
            if v is not None and not _is_int(v):
                raise TypeError(f"MeshShardingPolicy: {name} must be an int dim or None, "
                                f"got {v!r}")
        if not isinstance(replicate, MeshReplicationType):
            raise TypeError(f"MeshShardingPolicy: replicate must be a MeshReplicationType "
                            f"(NONE, ROW, COLUMN, ALL), got {replicate!r}")
        if cross_mesh_dim is not None and (x is not None or y is not None):
            raise ValueError("cross_mesh_dim is mutually exclusive with x/y splits")
        object.__setattr__(self, "x", None if x is None else int(x))
        object.__setattr__(self, "y", None if y is None else int(y))
        object.__setattr__(self, "replicate", replicate)
        object.__setattr__(self, "cross_mesh_dim",
                           None if cross_mesh_dim is None else int(cross_mesh_dim))

    def __repr__(self) -> str:
        parts = [f"{k}={getattr(self, k)}" for k in ("x", "y", "cross_mesh_dim")
                 if getattr(self, k) is not None]
        if self.replicate is not MeshReplicationType.NONE:
            parts.append(f"replicate=MeshReplicationType.{self.replicate.name}")
        return f"MeshShardingPolicy({', '.join(parts)})"

    def to_sharding(self, mesh: Mesh, rank: int) -> Sharding:
        """The :class:`Sharding` of a rank-``rank`` tensor on the ``(row, col)`` mesh,
        with the fork's precedence and checks: ``ALL`` ignores the splits;
        ``cross_mesh_dim`` ignores ``ROW``/``COLUMN``; ``x == y`` splits that dim over
        rows then columns, as ``cross_mesh_dim``; nothing set replicates.

        >>> m = Mesh({"row": 2, "col": 4})
        >>> MeshShardingPolicy(x=1, replicate=MeshReplicationType.COLUMN).to_sharding(m, 2).spec()
        [[], ['col']]
        """
        split: list[list[str]] = [[] for _ in range(rank)]

        def dim(v: int, msg: str) -> int:
            if not 0 <= v < rank:
                raise ValueError(f"{msg}: {v}, tensor rank is {rank}")
            return v

        rep = self.replicate
        if rep is MeshReplicationType.ALL:
            pass
        elif self.cross_mesh_dim is not None:
            split[dim(self.cross_mesh_dim, "Invalid cross_mesh_dim")] = list(AXES)
        elif rep is MeshReplicationType.ROW and self.x is not None:
            raise ValueError("Cannot shard on x-axis when replicating on rows")
        elif rep is MeshReplicationType.COLUMN and self.y is not None:
            raise ValueError("Cannot shard on y-axis when replicating on columns")
        else:
            if self.x is not None:
                split[dim(self.x, "Invalid x-split dimension")].append(AXES[1])
            if self.y is not None:
                # rows outer: x == y splits the dim over rows, then each row's part over
                # the columns (the linear-id order of cross_mesh_dim)
                split[dim(self.y, "Invalid y-split dimension")].insert(0, AXES[0])
        return Sharding(mesh, split)

    @classmethod
    def from_sharding(cls, sharding: Sharding) -> "MeshShardingPolicy":
        """The policy of a :class:`Sharding` on a 2-D mesh (axis 0 = rows, axis 1 =
        columns), where one exists: a dim split by rows then columns is
        ``cross_mesh_dim``; a split only over rows (columns) is ``replicate=ROW``
        (``COLUMN``); no split is ``ALL``. ``ValueError`` otherwise (partial, halos,
        explicit offsets, a dim split by columns then rows).

        >>> m = Mesh({"row": 2, "col": 2})
        >>> MeshShardingPolicy.from_sharding(Sharding(m, [["col"], ["row"]]))
        MeshShardingPolicy(x=0, y=1)
        """
        mesh = sharding.mesh
        if mesh.ndim != 2:
            raise ValueError(f"MeshShardingPolicy.from_sharding: the mesh {mesh} has "
                             f"{mesh.ndim} axes; Tilelang-Mesh meshes have 2 (rows, cols)")
        if sharding.is_partial or sharding.halo_sizes or sharding.sharded_dims_offsets:
            raise ValueError(f"MeshShardingPolicy.from_sharding: {sharding!r} has partial "
                             f"axes, halos or explicit offsets, which no policy states")
        x = y = cross = None
        for d in sharding.split_dims:
            axes = sharding.axes_of(d)
            if axes == (0, 1):
                cross = d
            elif axes == (0,):
                y = d
            elif axes == (1,):
                x = d
            else:
                raise ValueError(f"MeshShardingPolicy.from_sharding: dim {d} is split by "
                                 f"columns then rows ({sharding}); a policy splits rows "
                                 f"first")
        if cross is not None:
            if x is not None or y is not None:
                raise ValueError(f"MeshShardingPolicy.from_sharding: {sharding} splits one "
                                 f"dim over all cores and another over rows or columns")
            return cls(cross_mesh_dim=cross)
        if x is None and y is None:
            return cls(replicate=MeshReplicationType.ALL)
        if x is None:
            return cls(y=y, replicate=MeshReplicationType.ROW)
        if y is None:
            return cls(x=x, replicate=MeshReplicationType.COLUMN)
        return cls(x=x, y=y)


# -- T.MeshTensor ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ForkLayout:
    """A DRAM layout named by a fork kernel (``make_zz_layout(...)`` ...): recorded
    with its ``T.MeshTensor``, no effect on which elements a core owns.

    >>> str(ForkLayout("zz", (64, 64), (0, 1), (32, 32)))
    'zz(shape=(64, 64), axes=(0, 1), block=(32, 32))'
    """

    kind: str
    shape: tuple
    axes: tuple | None = None
    block_shape: tuple | None = None
    cluster_shape: tuple | None = None

    def __str__(self) -> str:
        parts = [f"shape={self.shape}"]
        for k, v in (("axes", self.axes), ("block", self.block_shape),
                     ("cluster", self.cluster_shape)):
            if v is not None:
                parts.append(f"{k}={v}")
        return f"{self.kind}({', '.join(parts)})"


def _layout_maker(kind: str):
    def make(shape_or_buffer: Any, axes: Any = None, block_shape: Any = (32, 32),
             cluster_shape: Any = None) -> ForkLayout:
        shape = shape_or_buffer.shape if hasattr(shape_or_buffer, "shape") else shape_or_buffer
        shape = tuple(int(static_int(s)) if static_int(s) is not None else s
                      for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        return ForkLayout(kind, shape, None if axes is None else tuple(axes),
                          None if block_shape is None else tuple(block_shape),
                          None if cluster_shape is None else tuple(cluster_shape))
    make.__name__ = f"make_{kind}_layout"
    make.__doc__ = f"The fork's {kind} layout, recorded (see :class:`ForkLayout`)."
    return make


LAYOUT_MAKERS = {f"make_{k}_layout": _layout_maker(k) for k in ("zz", "zn", "zzz", "nzz")}
LAYOUT_MAKERS["make_row_major"] = lambda shape: ForkLayout("row_major", tuple(shape))


@dataclass(frozen=True, eq=False)
class _MeshTensorType:
    """A ``T.MeshTensor(...)`` annotation: TileLang calls it once per parameter, and
    each call makes that parameter's shard-shaped buffer and registers it."""

    param: MeshParam
    shard_shape: tuple[int, ...]

    def __call__(self) -> tirx.Buffer:
        buf = T.Tensor(self.shard_shape, self.param.dtype)
        register(buf, self.param)
        return buf


def MeshTensor(shape: Any, sharding_policy: MeshShardingPolicy,  # noqa: N802 (the fork's)
               device_mesh_config: Any, dtype: Any = "float32",
               layout: Any = None) -> _MeshTensorType:
    """A kernel parameter holding one core's shard of a global tensor (the fork's
    ``T.MeshTensor``): inside the kernel it has the shard shape (ceil division); the
    caller passes the global torch tensor. ``layout`` is recorded.

    >>> A = MeshTensor((5, 8), MeshShardingPolicy(y=0, x=1), (2, 2), "float32")
    >>> A.shard_shape
    (3, 4)
    """
    mesh = _mesh_of(device_mesh_config, "T.MeshTensor device_mesh_config")
    if not isinstance(sharding_policy, MeshShardingPolicy):
        raise TypeError(f"T.MeshTensor: sharding_policy must be a T.MeshShardingPolicy, got "
                        f"{type(sharding_policy).__name__}")
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    static = tuple(static_int(n) for n in dims)
    if None in static or any(n < 0 for n in static):  # type: ignore[operator]
        raise ValueError(f"T.MeshTensor: shape {tuple(str(n) for n in dims)} must be "
                         f"non-negative ints; symbolic shapes are not supported by the "
                         f"emulator (the caller's tensor is split on the host)")
    sharding = sharding_policy.to_sharding(mesh, len(static))
    name = str(dtype)
    param = MeshParam("", tuple(static), sharding, name,  # type: ignore[arg-type]
                      None if layout is None else str(layout), repr(sharding_policy))
    return _MeshTensorType(param, sharding.tile_shape(static))


# -- regions and cores ---------------------------------------------------------------------------
def _memory(op: str, side: str, buf: tirx.Buffer) -> None:
    """A destination is a core's on-chip buffer; a source one or a ``T.MeshTensor``
    (the sending core's shard)."""
    scope = buf.scope()
    if scope == "global" and not (side == "src" and registered(buf) is not None):
        raise ValueError(f"{op}: {side} {buf.name!r} is a global-memory buffer; the "
                         f"destination is a core's on-chip buffer (T.alloc_shared) and the "
                         f"source one or a T.MeshTensor")
    if scope != "global" and not _per_core_scope(scope):
        raise ValueError(f"{op}: {side} {buf.name!r} has scope {scope!r}; comm ops move "
                         f"T.alloc_shared / T.alloc_local buffers")


def _region(op: str, side: str, x: Any) -> tuple[tirx.Call, tuple[int, ...], tirx.Buffer]:
    """``x`` (a buffer or a slice of one) as a ``tl.region`` with static extents."""
    return _comm_region(f"T.comm.{op}", side, x, _memory)


def _coord(v: Any, name: str, limit: int) -> tirx.PrimExpr:
    """One core coordinate or linear id: a Python int or ``IntImm`` is range-checked,
    another integer expression is checked when the op is lowered or analysed."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer or TIR PrimExpr, got bool.")
    s = static_int(v)
    if s is not None:
        if not 0 <= s < limit:
            raise ValueError(f"{name} {s} out of bounds for limit {limit}.")
        return tirx.IntImm("int32", s)
    if not isinstance(v, tirx.PrimExpr) or not str(v.dtype).startswith(("int", "uint")):
        raise TypeError(f"{name} must be an integer or TIR PrimExpr, got {type(v).__name__}.")
    return v


def _core_exprs(core: Any, name: str, mesh: Mesh) -> tuple[tirx.PrimExpr, ...]:
    """A core as ``(row, col)`` expressions, or one linear-id expression."""
    nrows, ncols = mesh.shape
    if isinstance(core, (tuple, list)):
        if len(core) != 2:
            raise ValueError(f"{name} must be a linear core id or a tuple of (row, col).")
        return (_coord(core[0], f"{name} row", nrows), _coord(core[1], f"{name} col", ncols))
    return (_coord(core, name, mesh.size),)


def _linear(exprs: Sequence[tirx.PrimExpr], mesh: Mesh) -> tirx.PrimExpr:
    return exprs[0] if len(exprs) == 1 else exprs[0] * mesh.shape[1] + exprs[1]


def _direction(direction: Any) -> int:
    if not isinstance(direction, str):
        raise TypeError(f"direction must be a string (h/horizontal, v/vertical, a/all), got "
                        f"{type(direction).__name__}")
    code = DIRECTION_MAP.get(direction.lower())
    if code is None:
        raise ValueError(f"Invalid direction string: {direction}")
    return code


def _size(size: Any, n: int, what: str) -> int:
    """The element count a transfer moves: ``size``, or all ``n`` when -1."""
    if not _is_int(size) or size < -1:
        raise ValueError("size must be an integer >= -1.")
    if size > n:
        raise ValueError(f"size {size} exceeds {what} buffer size {n}.")
    return n if size == -1 else int(size)


def _numel(ext: Sequence[int]) -> int:
    return int(np.prod(ext, dtype=np.int64))


def _dtypes(op: str, a: tirx.Buffer, b: tirx.Buffer) -> None:
    if a.dtype != b.dtype:
        raise ValueError(f"Source and destination buffer dtypes must match for {op}. Got "
                         f"{a.dtype} vs {b.dtype}.")


def _transfer(op: str, src: Any, dst: Any, size: Any) -> tuple[tirx.Call, tirx.Call, int]:
    """A broadcast's or put's regions, checked as the fork does, and its element
    count."""
    s_call, s_ext, s_buf = _region(op, "src", src)
    d_call, d_ext, d_buf = _region(op, "dst", dst)
    _dtypes(op, s_buf, d_buf)
    _compatible(op, s_ext, d_ext)
    return s_call, d_call, _size(size, _numel(s_ext), "source")


def _compatible(op: str, s: Sequence[int], d: Sequence[int]) -> None:
    """The fork's shape rule: same rank, each extent equal or 1 on either side, and no
    more source elements than destination elements."""
    if len(s) != len(d) or any(a != b and 1 not in (a, b) for a, b in zip(s, d)):
        raise ValueError(f"Source and destination buffer must have the same number of "
                         f"dimensions for {op}. (source {tuple(s)}, destination {tuple(d)})")
    if _numel(s) > _numel(d):
        raise ValueError(f"Source buffer size larger than destination buffer size: "
                         f"{_numel(s)} vs {_numel(d)}")


# -- T.comm ------------------------------------------------------------------------------------
class TilelangMeshComm:
    """``T.comm``: the fork's comm ops and core helpers, on the mesh of :func:`enable`.

    Each op emits ONE comm-op statement where the kernel calls it (its body, a
    ``T.macro`` or a plain helper) and returns ``None``; outside a kernel being built it
    returns the TIR call. ``docs/tilelang_mesh.md`` gives the exact semantics.
    """

    DIRECTION_MAP = DIRECTION_MAP
    REDUCE_TYPE_LIST = REDUCE_TYPE_LIST

    @staticmethod
    def get_target_mesh_shape() -> dict[str, int]:
        """``{"nrow": nrows, "ncol": ncols}`` of the enabled mesh."""
        nrows, ncols = enabled_mesh().shape
        return {"nrow": nrows, "ncol": ncols}

    @staticmethod
    def core_tuple_to_id(core_id: Any) -> Any:
        """``row * ncols + col`` (an int, or an expression for expressions)."""
        if not isinstance(core_id, (tuple, list)) or len(core_id) != 2:
            raise ValueError("core_id must be a tuple of (row, col).")
        mesh = enabled_mesh()
        exprs = _core_exprs(tuple(core_id), "core_id", mesh)
        lin = _linear(exprs, mesh)
        s = static_int(arith.Analyzer().simplify(lin))
        return lin if s is None else s

    @staticmethod
    def core_id_to_tuple(core_id: Any) -> tuple[Any, Any]:
        """``(core_id // ncols, core_id % ncols)``."""
        ncols = enabled_mesh().shape[1]
        return (core_id // ncols, core_id % ncols)

    @staticmethod
    def CoreId(core_id: Any) -> Any:  # noqa: N802 (the fork's name)
        """A core as its linear id: a ``(row, col)`` tuple, an int or an expression."""
        mesh = enabled_mesh()
        if isinstance(core_id, (tuple, list)):
            return TilelangMeshComm.core_tuple_to_id(core_id)
        if isinstance(core_id, tirx.PrimExpr) and static_int(core_id) is None:
            return core_id
        v = static_int(core_id)
        if v is None or isinstance(core_id, bool):
            raise ValueError("core_id must be either a tuple[int, int] or an int.")
        if not 0 <= v < mesh.size:
            nrows, ncols = mesh.shape
            raise ValueError(f"Core ID {v} out of bounds for mesh shape "
                             f"{{'nrow': {nrows}, 'ncol': {ncols}}}")
        return v

    @staticmethod
    def current_core() -> tirx.PrimExpr:
        """The linear id of the core running the program (inside ``T.Kernel``)."""
        ncols = enabled_mesh().shape[1]
        try:
            b = T.get_block_bindings()
        except Exception:  # noqa: BLE001 - TileLang raises its own kinds outside a kernel
            b = []
        if len(b) == 1:
            return b[0]
        if len(b) == 2:
            return b[0] * ncols + b[1]
        raise ValueError("T.comm.current_core() must be called inside T.Kernel(nrows * ncols) "
                         "(a 1-D launch: block id = core id) or T.Kernel(nrows, ncols)")

    @staticmethod
    def broadcast(src: Any, dst: Any, src_core: Any, direction: str = "all",
                  size: int = -1) -> tirx.Call | None:
        """Every core of ``src_core``'s row (``"h"``), column (``"v"``) or mesh
        (``"all"``), ``src_core`` included, gets the first ``size`` elements (all for
        -1, row-major) of ``src_core``'s ``src`` into the first elements of its ``dst``;
        other cores keep ``dst``."""
        mesh = enabled_mesh()
        s_call, d_call, n = _transfer("broadcast", src, dst, size)
        code = _direction(direction)
        core = _core_exprs(src_core, "src_core", mesh)
        return _statement(encode("tm_broadcast", mesh, _DIR_AXES[code],
                                 {"src_core": core, "size": n}, s_call, d_call))

    @staticmethod
    def put(src: Any, dst: Any, src_core: Any, dst_core: Any,
            size: int = -1) -> tirx.Call | None:
        """``dst_core``'s ``dst`` gets the first ``size`` elements of ``src_core``'s
        ``src``. Between different rows and columns it travels down ``src_core``'s
        column to ``(dst_row, src_col)`` and then along that row, and that intermediate
        core's ``dst`` is written too (as on the chip)."""
        mesh = enabled_mesh()
        s_call, d_call, n = _transfer("put", src, dst, size)
        sc = _core_exprs(src_core, "src_core", mesh)
        dc = _core_exprs(dst_core, "dst_core", mesh)
        if arith.Analyzer().can_prove_equal(_linear(sc, mesh), _linear(dc, mesh)):
            raise ValueError("T.comm.put requires src_core and dst_core to be different")
        return _statement(encode("tm_put", mesh, (0, 1),
                                 {"src_core": sc, "dst_core": dc, "size": n}, s_call, d_call))

    @staticmethod
    def all_gather(send_buffer: Any, recv_buffer: Any, direction: str = "all",
                   size: int = -1, axis: int | None = None, src_offset_byte: int = 0
                   ) -> tirx.Call | None:
        """Every core of a row (``"h"``, members by column), column (``"v"``, by row)
        or the mesh (``"all"``, by linear id) gets every member's ``send_buffer``: without
        ``axis`` stacked (``recv[k]`` = member ``k``'s), with ``axis`` (0 or the last)
        concatenated along it. ``size``: the first elements of each send, into the first
        elements of its slot."""
        op, mesh = "all_gather", enabled_mesh()
        code = _direction(direction)
        s_call, s_ext, s_buf = _region(op, "src", send_buffer)
        d_call, d_ext, d_buf = _region(op, "dst", recv_buffer)
        _dtypes(op, s_buf, d_buf)
        k = int(np.prod([mesh.shape[a] for a in _DIR_AXES[code]]))
        ndim = len(s_ext)
        if axis is None:
            want = (k,) + tuple(s_ext)
        else:
            if not _is_int(axis) or not -ndim <= axis < ndim:
                raise ValueError(f"axis {axis} out of range for send buffer with {ndim} "
                                 f"dimensions.")
            norm = axis + ndim if axis < 0 else int(axis)
            if norm not in (0, ndim - 1):
                raise ValueError(f"Only axis=0 or axis=-1 (last dim) are currently supported, "
                                 f"got axis={axis} (normalized to {norm}) for {ndim}-D send "
                                 f"buffer.")
            want = tuple(e * k if d == norm else e for d, e in enumerate(s_ext))
        if tuple(d_ext) != want:
            raise ValueError(f"Receive buffer shape must be {list(want)} to hold gathered "
                             f"data from {k} cores, but got {list(d_ext)}.")
        n = _size(size, _numel(s_ext), "send")
        if not _is_int(src_offset_byte) or src_offset_byte < 0:
            raise ValueError("src_offset_byte must be a non-negative integer.")
        if src_offset_byte:
            raise ValueError(f"T.comm.all_gather: src_offset_byte={src_offset_byte} is the "
                             f"fork's compiler-internal offset; kernels pass 0 (the default)")
        params = {"size": n, "stacked": axis is None,
                  "axis": 0 if axis is None else (axis + ndim if axis < 0 else int(axis))}
        return _statement(encode("tm_all_gather", mesh, _DIR_AXES[code], params, s_call,
                                 d_call))

    @staticmethod
    def all_reduce(buffer: Any, out: Any, reduce_type: str, direction: str, dim: int = -1,
                   clear: bool = True) -> tirx.Call | None:
        """``out`` = ``buffer`` reduced over ``dim`` on each core, then combined over the
        group (``"h"``: the row, columns in order; ``"v"``: the column; ``"all"``: each
        row's columns, then the rows); ``clear=False`` combines into ``out``'s old
        value. ``out`` has ``buffer``'s shape without ``dim`` or with 1 there."""
        op, mesh = "all_reduce", enabled_mesh()
        s_call, s_ext, s_buf = _region(op, "src", buffer)
        d_call, d_ext, d_buf = _region(op, "dst", out)
        rank = len(s_ext)
        if not _is_int(dim) or not -1 <= dim < rank:
            raise ValueError(f"dim {dim} out of bounds for buffer with {rank} dimensions.")
        dim = rank - 1 if dim == -1 else int(dim)
        drop = tuple(e for d, e in enumerate(s_ext) if d != dim)
        keep = tuple(1 if d == dim else e for d, e in enumerate(s_ext))
        if tuple(d_ext) not in (drop, keep):
            raise ValueError(f"Invalid reduce output shape, buffer shape is {list(s_ext)}, "
                             f"dim is {dim}, output shape is {list(d_ext)}, expected shapes "
                             f"are {list(drop)} or {list(keep)}")
        if not isinstance(reduce_type, str) or reduce_type.lower() not in REDUCE_TYPE_LIST:
            shown = reduce_type.lower() if isinstance(reduce_type, str) else reduce_type
            raise ValueError(f"Reduction op must be one of {list(REDUCE_TYPE_LIST)}, but got "
                             f"{shown}.")
        kind = reduce_type.lower()
        code = _direction(direction)
        if clear not in (True, False):
            raise ValueError("clear must be a boolean value.")
        _dtypes(op, s_buf, d_buf)
        if kind.startswith("bit") and not str(s_buf.dtype).startswith(("int", "uint")):
            raise ValueError(f"T.comm.all_reduce: reduce type {kind!r} needs an integer "
                             f"dtype, got {s_buf.dtype} ({s_buf.name!r})")
        return _statement(encode("tm_all_reduce", mesh, _DIR_AXES[code],
                                 {"reduce_type": kind, "dim": dim, "clear": bool(clear)},
                                 s_call, d_call))

    @staticmethod
    def barrier(group: Any = None) -> tirx.Call | None:
        """Every core waits for the others (a ``group`` of ``(row, col)`` cores is
        checked; the emulator is bulk-synchronous, so every barrier is mesh-wide)."""
        mesh = enabled_mesh()
        if group is not None:
            for core in group:
                TilelangMeshComm.core_tuple_to_id(core)
        return _statement(encode("barrier", mesh, (0, 1), {}))

    @staticmethod
    def fence() -> None:
        """A memory fence: nothing to order in the bulk-synchronous emulator (no
        statement)."""
        return None


comm = TilelangMeshComm()


def get_sunmmio_device_mesh_config() -> tuple[int, int]:
    """``(nrows, ncols)`` of the enabled mesh (the fork's driver helper)."""
    return enabled_mesh().shape  # type: ignore[return-value]


# -- enable() and the message for kernels that forgot it -------------------------------------------
_OURS = {"comm": comm, "MeshTensor": MeshTensor, "MeshShardingPolicy": MeshShardingPolicy,
         "MeshReplicationType": MeshReplicationType}


def _install(module: Any, names: dict[str, Any]) -> None:
    for name, value in names.items():
        if name not in vars(module):
            setattr(module, name, value)


def world(world_size: int) -> Any:
    """``with tm.world(W):`` builds ``T.dist`` kernels for ``W`` ranks (see
    :func:`meshtensor.tilelang.language.dist.world`)."""
    from .dist import world as _world
    return _world(world_size)


def enable(mesh: Any = (4, 4)) -> Mesh:
    """Make kernels written for Tilelang-Mesh parse and run here: set the target mesh
    ``(nrows, ncols)`` and install the fork's names on ``tilelang.language`` (and the
    driver and layout helpers) where they are absent. Idempotent; a name TileLang
    already has is left alone. Returns the mesh (axes ``row``, ``col``).

    >>> enable(mesh=(2, 4))
    Mesh({'row': 2, 'col': 4})
    >>> import tilelang.language as T
    >>> T.comm.get_target_mesh_shape()
    {'nrow': 2, 'ncol': 4}
    """
    m = _mesh_of(mesh, "tilelang_mesh.enable")
    _STATE.mesh = m
    _install(T, _OURS)
    from . import dist  # T.dist, the rank layer (its module is the namespace)
    _install(T, {"dist": dist})
    import tilelang.carver.arch.driver as driver
    import tilelang.layout as layout
    _install(driver, {"get_sunmmio_device_mesh_config": get_sunmmio_device_mesh_config})
    _install(layout, LAYOUT_MAKERS)
    return m


def _install_hook() -> None:
    """On ``tilelang.language``: a missing fork name says to call :func:`enable`."""
    prev = vars(T).get("__getattr__")
    if getattr(prev, "_meshtensor", False):
        return

    def __getattr__(name: str) -> Any:  # noqa: N807 (module hook)
        if name in FORK_NAMES:
            raise AttributeError(
                f"module 'tilelang.language' has no attribute {name!r}: T.{name} comes from "
                f"Tilelang-Mesh; to run such kernels here call `from meshtensor.tilelang "
                f"import tilelang_mesh as tm; tm.enable(mesh=(nrows, ncols))` first")
        if name in UNSUPPORTED:
            raise AttributeError(
                f"module 'tilelang.language' has no attribute {name!r}: T.{name} is a "
                f"Tilelang-Mesh name that meshtensor does not emulate (docs/tilelang_mesh.md, "
                f"'Not supported')")
        if prev is not None:
            return prev(name)
        raise AttributeError(f"module 'tilelang.language' has no attribute {name!r}")

    __getattr__._meshtensor = True  # type: ignore[attr-defined]
    T.__getattr__ = __getattr__  # type: ignore[attr-defined]


_install_hook()
