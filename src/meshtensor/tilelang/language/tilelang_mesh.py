"""Kernels written for SUNMMIO's TileLang (the chip's fork of TileLang) on stock TileLang.

``enable(mesh=(nrows, ncols))`` installs the fork's names on ``tilelang.language``
where they are absent: ``T.comm`` (``broadcast``, ``put``, ``all_gather``,
``all_reduce``, ``barrier``, ``fence``, ``current_core``, ``CoreId``, ``core_to_id``,
``core_tuple_to_id``, ``core_id_to_tuple``, ``get_target_mesh_shape``),
``T.MeshTensor``, ``T.MeshShardingPolicy``, ``T.MeshReplicationType``, ``T.placement``,
the mesh symbols (``T.mesh_nrows()``, ``T.mesh_ncols()``, ``T.mesh_ncores()``,
``T.nrows()``, ``T.ncols()``), ``T.get_local_extent``, ``T.get_rank_extent`` and
``T.dist`` (a placeholder until multi-chip kernels land); ``T.Kernel()`` with no extent
(one program per core); ``get_sunmmio_device_mesh_config`` on
``tilelang.carver.arch.driver`` and the fork's layout makers (``make_zz_layout`` ...) on
``tilelang.layout``, which ``T.annotate_layout`` records. A kernel written for the fork
then parses unchanged, and ``compile_mesh_kernel`` runs it (global torch tensors in).

The model (as SUNMMIO's TileLang defines it): a mesh of ``nrows x ncols`` cores; core
``(row, col)`` has linear id ``row * ncols + col``; ``T.Kernel()`` (or
``T.Kernel(T.mesh_ncores())``) runs one program per core, its variable the linear core
id; a grid of blocks runs block ``bx + gx * (by + gy * bz)`` on that core, as the
upstream binds them (see :mod:`..ir.launch`). Each ``T.comm`` op becomes ONE comm-op
statement of :mod:`..ir.comm_op` (``tm_broadcast``, ``tm_put``, ``tm_all_gather``,
``tm_all_reduce``; ``barrier`` is ours), lowered by ``LowerMeshComm`` and counted by
``analyze_mesh_communication`` like every comm op. Every check the fork makes with
``assert`` is a ``ValueError`` here, with the fork's condition and text.

Where SUNMMIO's current TileLang and the older fork differ, the current one applies;
``enable(..., compat="2025")`` gives the older fork's rules: uneven ``T.MeshTensor``
sizes in ceil blocks (instead of the balanced split), and comm operands by its compact
shape rule (same rank, extents equal or 1) instead of the current region rules.
As in SUNMMIO's current frontend, kernel code cannot read ``A.shape`` of a
``T.MeshTensor`` parameter ("ambiguous"); ``enable(..., legacy_shape=True)`` (implied by
``compat="2025"``) gives the older reading, the core's slot shape.

Mesh axes are named ``row`` (axis 0) and ``col`` (axis 1): the fork's ``y`` splits
over rows, its ``x`` over columns.

>>> import tilelang.language as T
>>> mesh = enable(mesh=(2, 2))
>>> T.MeshShardingPolicy(y=0, x=1).placement
Placement(row=0, col=1)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import tilelang  # noqa: F401  (first: its bundled tvm)
import tilelang.language as T
from tilelang.language.utils import region as _tl_region
from tvm import arith, tirx

from ...mesh import Mesh, _is_int
from ...sharding import Sharding
from ...reduction import REDUCTIONS, kinds
from ..ir.comm_op import encode
from ..ir.expr import static_int
from ..ir.mesh_param import MX_PARAMS as MX_PARAMS_ATTR, MeshParam, with_mesh_params
from . import dist as _dist
from . import mx as _mx
from . import placement as _placement
from .comm import _per_core_scope, _statement
from .hierarchical_layout import (HierarchicalLayout, make_blockwise_zz_layout,
                                  make_hierarchical_layout)
from .placement import (MeshReplicationType, MeshShardingPolicy, Placement, as_placement)

__all__ = ["enable", "enabled_mesh", "world", "compat", "legacy_shape", "MeshReplicationType",
           "MeshShardingPolicy",
           "MeshTensor", "comm", "DIRECTION_MAP", "REDUCE_TYPE_LIST", "FORK_NAMES",
           "UNSUPPORTED", "ForkLayout", "HierarchicalLayout", "COMPAT",
           "get_local_extent", "get_rank_extent",
           "mesh_nrows", "mesh_ncols", "mesh_ncores"]

DIRECTION_MAP = {"horizontal": 0, "h": 0, "vertical": 1, "v": 1, "all": 2, "a": 2}
REDUCE_TYPE_LIST = kinds("T.comm")  # the fork's reduction kinds (meshtensor.reduction)
#: the names enable() puts on tilelang.language (where TileLang has none of its own)
FORK_NAMES = ("comm", "MeshTensor", "MeshShardingPolicy", "MeshReplicationType",
              "placement", "mesh_nrows", "mesh_ncols", "mesh_ncores", "nrows", "ncols",
              "get_local_extent", "get_rank_extent", "dist", "Tiles", "annotate_tileview")
#: SUNMMIO names the emulator does not provide (their errors say so)
UNSUPPORTED = ("dma_load", "dma_store", "TensorWithMeta")
#: the compatibility modes of :func:`enable`
COMPAT = (None, "2025")
AXES = ("row", "col")
_DIR_AXES = {0: (1,), 1: (0,), 2: (0, 1)}  # h: along a row (col varies), v, all


class _State:
    mesh: Mesh | None = None
    compat: str | None = None
    #: ``A.shape`` of a ``T.MeshTensor`` parameter is its slot shape (the older API)
    legacy_shape: bool = False


_STATE = _State()


def enabled_mesh() -> Mesh:
    """The mesh set by :func:`enable`; ``ValueError`` saying to call it otherwise."""
    if _STATE.mesh is None:
        raise ValueError("Tilelang-Mesh names need a mesh: call `from meshtensor.tilelang "
                         "import tilelang_mesh as tm; tm.enable(mesh=(nrows, ncols))` first")
    return _STATE.mesh


def compat() -> str | None:
    """The compatibility mode of :func:`enable` (``None``: SUNMMIO's current TileLang)."""
    return _STATE.compat


def legacy_shape() -> bool:
    """Whether kernel code may read ``A.shape`` of a ``T.MeshTensor`` parameter (its
    slot shape, as the older fork and SUNMMIO's TileLang before its shape API read it):
    ``enable(..., legacy_shape=True)`` or ``compat="2025"``."""
    return _STATE.legacy_shape


def _split() -> str:
    return "ceil" if _STATE.compat == "2025" else "balanced"


def _mesh_of(config: Any, what: str) -> Mesh:
    try:
        nrows, ncols = config
    except (TypeError, ValueError):
        raise ValueError(f"{what}: the mesh must be (nrows, ncols), got {config!r}") from None
    out = []
    for name, v in (("nrows", nrows), ("ncols", ncols)):
        s = static_int(v)
        if s is None or isinstance(v, bool) or s < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
        out.append(s)
    return Mesh({AXES[0]: out[0], AXES[1]: out[1]})


# -- the mesh symbols ----------------------------------------------------------------------
def mesh_nrows() -> tirx.IntImm:
    """The enabled mesh's number of rows (SUNMMIO resolves the symbol to its target's
    mesh when it compiles; the emulator's target is the mesh of :func:`enable`)."""
    return tirx.IntImm("int32", enabled_mesh().shape[0])


def mesh_ncols() -> tirx.IntImm:
    """The enabled mesh's number of columns."""
    return tirx.IntImm("int32", enabled_mesh().shape[1])


def mesh_ncores() -> tirx.IntImm:
    """The enabled mesh's number of cores."""
    return tirx.IntImm("int32", enabled_mesh().size)


# -- layouts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ForkLayout:
    """A DRAM or SRAM layout named by a fork kernel (``make_zz_layout(...)`` ...):
    recorded with its ``T.MeshTensor`` or by ``T.annotate_layout``; a layout changes
    where the chip keeps each element, not which value a kernel computes.

    >>> str(ForkLayout("zz", (64, 64), (0, 1), (32, 32)))
    'zz(shape=(64, 64), axes=(0, 1), block=(32, 32))'
    """

    kind: str
    shape: tuple
    axes: tuple | None = None
    block_shape: tuple | None = None
    cluster_shape: tuple | None = None
    #: ``aligned_row_major``: the row pitch in elements (the last dim rounded up to the
    #: alignment)
    pitch: int | None = None

    def __str__(self) -> str:
        parts = [f"shape={self.shape}"]
        for k, v in (("axes", self.axes), ("block", self.block_shape),
                     ("cluster", self.cluster_shape), ("pitch", self.pitch)):
            if v is not None:
                parts.append(f"{k}={v}")
        return f"{self.kind}({', '.join(parts)})"


def _shape_of(shape_or_buffer: Any) -> tuple:
    shape = shape_or_buffer.shape if hasattr(shape_or_buffer, "shape") else shape_or_buffer
    shape = tuple(shape) if not isinstance(shape, (int, tirx.PrimExpr)) else (shape,)
    return tuple(static_int(s) if static_int(s) is not None else str(s) for s in shape)


def _layout_maker(kind: str):
    def make(shape_or_buffer: Any, axes: Any = None, block_shape: Any = (32, 32),
             cluster_shape: Any = None, *_: Any, **__: Any) -> ForkLayout:
        return ForkLayout(kind, _shape_of(shape_or_buffer),
                          None if axes is None else tuple(int(a) for a in axes),
                          None if block_shape is None else tuple(block_shape),
                          None if cluster_shape is None else tuple(cluster_shape))
    make.__name__ = f"make_{kind}_layout"
    make.__doc__ = f"The fork's {kind} layout, recorded (see :class:`ForkLayout`)."
    return make


def _row_major(shape_or_buffer: Any, *_: Any, **__: Any) -> ForkLayout:
    return ForkLayout("row_major", _shape_of(shape_or_buffer))


def _aligned_row_major(shape_or_buffer: Any, dtype: Any = "float16", align_bytes: int = 64,
                       *_: Any, **__: Any) -> ForkLayout:
    """SUNMMIO's ``make_aligned_row_major``: row-major, each row padded to a multiple of
    ``align_bytes`` (RSRAM's alignment), recorded with its row pitch.

    >>> str(_aligned_row_major((2, 40), "float16", 64))
    'aligned_row_major(shape=(2, 40), pitch=64)'
    """
    import tvm
    shape = _shape_of(shape_or_buffer)
    per = max(1, int(align_bytes) * 8 // tvm.runtime.DataType(str(dtype)).bits)
    last = shape[-1] if isinstance(shape[-1], int) else None
    pitch = None if last is None else -(-last // per) * per
    return ForkLayout("aligned_row_major", shape, pitch=pitch)


LAYOUT_MAKERS = {f"make_{k}_layout": _layout_maker(k)
                 for k in ("zz", "zn", "zzz", "nzz", "mxzz", "mxznn", "mxznz",
                           "mx_row_major")}
LAYOUT_MAKERS["make_row_major"] = _row_major
LAYOUT_MAKERS["make_aligned_row_major"] = _aligned_row_major
LAYOUT_MAKERS["make_hierarchical_layout"] = make_hierarchical_layout
LAYOUT_MAKERS["make_blockwise_zz_layout"] = make_blockwise_zz_layout
LAYOUT_MAKERS["get_mx_scale_shape"] = _mx.get_mx_scale_shape


# -- T.MeshTensor ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MeshTensorType:
    """What ``T.MeshTensor(...)`` returns: a parameter annotation. The kernel's buffer
    has the core's slot shape (:attr:`local_shape`); :meth:`param` is the
    :class:`MeshParam` the kernel records for it.

    >>> enable(mesh=(2, 2))
    Mesh({'row': 2, 'col': 2})
    >>> A = MeshTensor((5, 8), MeshShardingPolicy(y=0, x=1), (2, 2), "float32")
    >>> A.local_shape, A.shard_shape
    ((3, 4), (3, 4))
    """

    global_shape: tuple[int, ...]
    local_shape: tuple[int, ...]
    placement: Placement
    policy: str
    mesh: Mesh
    dtype: str
    layout: str | None
    rank_placement: str | None
    split: str
    #: the ``T.dist.placement`` value and the world it was built for (multi-chip)
    rank_spec: Any = None
    world: int = 1
    #: the global tensor's hierarchical layout (``hierarchical_dims=`` ...), if named
    hierarchical: HierarchicalLayout | None = None
    #: an MX tensor (``T.mxfp8``/``T.mxfp4``): ``(kind, layout kind, the scale grid's
    #: T.MeshTensor)``; ``dtype`` is then its element dtype
    mx: tuple | None = None

    @property
    def local_layout(self) -> HierarchicalLayout | None:
        """Each core's layout of its part, from :attr:`hierarchical` (``None`` when the
        kernel named none): the split dims' most significant digits divided by their
        shard counts, strides made compact (SUNMMIO's rule)."""
        if self.hierarchical is None:
            return None
        sharding = self.placement.sharding(self.mesh, self.global_shape, self.split)
        return self.hierarchical.shard([sharding.shard_count(d)
                                        for d in range(len(self.global_shape))])

    @property
    def meta_data(self) -> dict:
        """The upstream's ``meta_data`` record: ``"sharded_layout"``, each core's layout
        of its part (:attr:`local_layout`, else the tensor's layout kind over the local
        shape), recorded where a kernel annotates a buffer with it."""
        lay = self.local_layout
        if lay is None:
            kind = (self.layout or "row_major").split("(")[0]
            lay = ForkLayout(kind, tuple(self.local_shape))
        return {"sharded_layout": lay}

    @property
    def shard_shape(self) -> tuple[int, ...]:
        """The older name of :attr:`local_shape`."""
        return self.local_shape

    @property
    def rank_shape(self) -> tuple[int, ...]:
        """One chip's slot: the whole tensor, or, split over ranks
        (``rank_placement=T.dist.placement.shard(d)``), dim ``d`` ceil-divided."""
        if self.rank_spec is None:
            return self.global_shape
        return self.rank_spec.rank_shape(self.global_shape, self.world)

    def param(self, name: str) -> MeshParam:
        axes = self.placement.split_axes(len(self.global_shape))
        if any(static_int(d) is None for d in self.global_shape):
            # placed when the kernel runs (MeshParam.bind, from the caller's tensors)
            return MeshParam(name, tuple(_dim_text(d) for d in self.global_shape),
                             Sharding(self.mesh, axes), self.dtype, self.layout, self.policy,
                             tuple(static_int(d) if static_int(d) is not None else str(d)
                                   for d in self.local_shape), self.rank_placement,
                             split=self.split, line=self.placement.line)
        sharding = self.placement.sharding(self.mesh, self.global_shape, self.split)
        return MeshParam(name, self.global_shape, sharding, self.dtype, self.layout,
                         self.policy, self.local_shape, self.rank_placement,
                         split=self.split, line=self.placement.line)

    def get_local_extent(self, cid: Any = None, rank_id: Any = None) -> tuple[Any, ...]:
        """The valid extent on linear core ``cid`` (the running core when ``None``):
        ints for an int ``cid``, TIR expressions for an expression."""
        if cid is None:
            cid = comm.current_core()
        if static_int(cid) is not None:
            cid = static_int(cid)
            if not 0 <= cid < self.mesh.size:
                raise ValueError(f"get_local_extent: core id {cid} out of range "
                                 f"[0, {self.mesh.size})")
        shape: Any = self.global_shape
        if self.rank_spec is not None and self.rank_spec.kind == "shard":
            if rank_id is None:
                raise ValueError(f"get_local_extent: the tensor is split over ranks "
                                 f"(rank_placement={self.rank_placement}): rank_id is "
                                 f"required")
            shape = self.get_rank_extent(rank_id)
        return self.placement.local_extent(self.mesh, shape, cid, self.split)

    def get_rank_extent(self, rank_id: Any) -> tuple[Any, ...]:
        """Rank ``rank_id``'s valid extent (ints for an int rank, TIR expressions for
        an expression): the whole tensor, or its balanced part of the split dim (the
        first ``D % W`` ranks get one more)."""
        spec = self.rank_spec
        if spec is None or spec.kind != "shard":
            return self.global_shape
        n, w = int(self.global_shape[spec.dim]), self.world
        r = static_int(rank_id)
        if r is not None:
            if not 0 <= r < w:
                raise ValueError(f"get_rank_extent: rank {r} out of range [0, {w})")
            lo, hi = _dist.rank_extents(n, w)[r]
            size: Any = hi - lo
        else:
            size = tirx.Select(rank_id < n % w, n // w + 1, n // w) if n % w else n // w
        out: list = list(self.global_shape)
        out[spec.dim] = size
        return tuple(out)

    def __call__(self) -> "_MeshTensorArg":
        return _MeshTensorArg(self, T.Tensor(self.local_shape, self.dtype))


def _mx_mesh_tensor(kind: Any, shape: Any, placement: Any, mesh: Any, layout: Any,
                    rank_placement: Any, hdims: Any) -> tuple:
    """An MX ``T.MeshTensor``'s record: ``(kind, layout kind, the scale grid's
    T.MeshTensor)``. The caller passes the elements and the scale grid
    (:func:`~meshtensor.tilelang.language.mx.grid_shape`), which must split with them:
    every core's part covers whole 32-element scale groups."""
    lk = "mxzz" if layout is None else _mx._layout_kind(layout)
    if lk not in ("mxzz", "mxznz", "mxznn", "mx_row_major"):
        raise ValueError(f"T.MeshTensor: an {kind.name} tensor needs an MX layout "
                         f"(make_mxzz_layout, make_mxznz_layout, make_mxznn_layout, "
                         f"make_mx_row_major_layout), got {layout}")
    if rank_placement is not None or hdims is not None:
        raise ValueError(f"T.MeshTensor: an {kind.name} tensor split over ranks or with a "
                         f"hierarchical layout is not defined by the upstream's MX layouts")
    dims = tuple(static_int(d) if not isinstance(d, int) else d
                 for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if len(dims) != 2 or any(not isinstance(d, int) for d in dims):
        raise ValueError(f"T.MeshTensor: an {kind.name} tensor is rank 2 with static sizes "
                         f"(its MX layout's), got shape {tuple(shape)}")
    grid = _mx.grid_shape(lk, dims)
    scales = MeshTensor(grid, placement, mesh, _mx.SCALE_DTYPE)
    elems = MeshTensor(dims, placement, mesh, kind.element)
    g = _mx.grouped_dim(lk)
    (es, ee), (ss, se) = elems.param("x").regions(), scales.param("x").regions()
    if not (np.array_equal(es[:, g], ss[:, g] * _mx.MX_BLOCK)
            and np.array_equal(ee[:, g], se[:, g] * _mx.MX_BLOCK)):
        raise ValueError(f"T.MeshTensor: an {kind.name} tensor of shape {dims} "
                         f"({lk.upper()}: 32 elements of dim {g} share a scale) split "
                         f"{elems.policy} gives a core a part that is not whole scale "
                         f"groups along dim {g} (its parts {es[:, g].tolist()}..."
                         f"{ee[:, g].tolist()}); each part must start and end on a "
                         f"multiple of {_mx.MX_BLOCK}")
    return (kind, lk, scales)


@dataclass(frozen=True, eq=False)
class _MeshTensorArg:
    """A ``T.MeshTensor`` parameter on its way into TileLang's builder, which the
    builder hook of :func:`enable` turns into the parameter's buffer and its record."""

    type: MeshTensorType
    buffer: tirx.Buffer


def _dtype_name(dtype: Any) -> str:
    name = str(getattr(dtype, "dtype", dtype))
    try:
        import tvm
        tvm.runtime.DataType(name)
    except Exception:  # noqa: BLE001 - TVM raises its own kinds
        raise ValueError(f"T.MeshTensor: dtype {dtype!r} is not a dtype") from None
    return name


def _is_mesh_config(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2 and all(
        static_int(v) is not None or isinstance(v, tirx.PrimExpr) for v in value)


def MeshTensor(shape: Any, placement: Any = None, device_mesh_config: Any = None,  # noqa: N802
               dtype: Any = "float32", layout: Any = None, *, sharding_policy: Any = None,
               rank_placement: Any = None, hierarchical_dims: Any = None,
               hierarchical_strides: Any = None, hierarchical_groups: Any = None
               ) -> MeshTensorType:
    """A kernel parameter holding one core's part of a global tensor (SUNMMIO's
    ``T.MeshTensor``): the buffer the kernel sees has the core's slot shape (ceil
    division); the caller passes the global torch tensor.

    ``placement``: a ``T.placement`` value, a ``[row, col]`` sequence of
    ``T.placement.S(dim)`` / ``R()``, or a ``T.MeshShardingPolicy`` (``sharding_policy=``
    is its older keyword). ``device_mesh_config``: ``(nrows, ncols)``, or omitted (the
    enabled mesh; a dtype in its place is the dtype). ``layout`` is recorded;
    ``rank_placement`` is recorded (chips split the tensor first in multi-chip kernels).
    Uneven sizes split balanced (``compat="2025"``: in ceil blocks).
    ``hierarchical_dims``, ``hierarchical_strides`` and ``hierarchical_groups`` (given
    together, by keyword) name the tensor's DRAM layout (:class:`HierarchicalLayout`);
    each core keeps its part in :attr:`MeshTensorType.local_layout`. It is recorded and
    checked (its dims must make the shape, a split dim's most significant digit must
    divide among its shards); values are the logical tensor's.

    >>> enable(mesh=(2, 2))
    Mesh({'row': 2, 'col': 2})
    >>> MeshTensor((5,), T.placement.mesh_as_line(0), "bfloat16").local_shape
    (2,)
    """
    if sharding_policy is not None:
        if placement is not None:
            raise TypeError("Specify only one of placement or the legacy sharding_policy "
                            "argument")
        placement = sharding_policy
    if placement is None:
        raise TypeError("MeshTensor requires a placement")
    if device_mesh_config is not None and not _is_mesh_config(device_mesh_config):
        if isinstance(device_mesh_config, (tuple, list)):
            raise ValueError(f"T.MeshTensor device_mesh_config: the mesh must be (nrows, "
                             f"ncols), got {device_mesh_config!r}")
        dtype, device_mesh_config = device_mesh_config, None
    mesh = (enabled_mesh() if device_mesh_config is None
            else _mesh_of(device_mesh_config, "T.MeshTensor device_mesh_config"))
    if isinstance(placement, dict) or not isinstance(
            placement, (MeshShardingPolicy, Placement, list, tuple)):
        raise TypeError(f"T.MeshTensor: sharding_policy must be a T.MeshShardingPolicy or "
                        f"a T.placement value, got {type(placement).__name__}")
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    static = tuple(_mesh_dim(n, dims) for n in dims)
    if isinstance(placement, MeshShardingPolicy):
        placement.check(len(static))
    place, text = as_placement(placement)
    place.check(len(static))
    slot = tuple(static)
    if rank_placement is not None:  # chips split the tensor first (T.dist)
        if not isinstance(rank_placement, _dist.RankPlacementSpec):
            raise TypeError(f"T.MeshTensor: rank_placement must be a T.dist.placement value, "
                            f"got {type(rank_placement).__name__}")
        slot = rank_placement.check(len(static)).rank_shape(static, _dist.current_world())
    kind = _mx.mx_kind(str(getattr(dtype, "dtype", dtype)))
    mx = None
    if kind is not None:
        mx = _mx_mesh_tensor(kind, shape, placement, device_mesh_config, layout,
                             rank_placement, hierarchical_dims)
        dtype = kind.element
    hier = _hierarchical(static, layout, rank_placement, hierarchical_dims,
                         hierarchical_strides, hierarchical_groups)
    out = MeshTensorType(tuple(static), place.local_shape(mesh, slot), place,  # type: ignore
                         text, mesh, _dtype_name(dtype),
                         None if layout is None else str(layout),
                         None if rank_placement is None else repr(rank_placement), _split(),
                         rank_placement, _dist.current_world(), hier, mx)
    if hier is not None:  # checks the shard rule now; the record names both layouts
        from dataclasses import replace
        try:
            local = out.local_layout
        except ValueError as e:
            raise ValueError(f"T.MeshTensor: {e}") from None
        out = replace(out, layout=f"{hier}, per core {local}")
    return out


def _hierarchical(shape: Sequence[Any], layout: Any, rank_placement: Any, hdims: Any,
                  hstrides: Any, hgroups: Any) -> HierarchicalLayout | None:
    """The ``hierarchical_*`` arguments of ``T.MeshTensor`` as one layout, or ``None``."""
    given = {"hierarchical_dims": hdims, "hierarchical_strides": hstrides,
             "hierarchical_groups": hgroups}
    if all(v is None for v in given.values()):
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"T.MeshTensor: {missing} missing: hierarchical_dims, "
                         f"hierarchical_strides and hierarchical_groups name one layout "
                         f"together; give all three")
    if layout is not None:
        raise ValueError(f"T.MeshTensor: layout={layout!s} and hierarchical_dims= both name "
                         f"the tensor's layout; give one")
    if rank_placement is not None:
        raise ValueError("T.MeshTensor: hierarchical_dims= with rank_placement=: SUNMMIO's "
                         "TileLang defines the hierarchical layout of one chip's tensor "
                         "only; drop one of them")
    if any(static_int(n) is None for n in shape):
        raise ValueError(f"T.MeshTensor: hierarchical_dims= needs a static shape, got "
                         f"{tuple(str(n) for n in shape)} (SUNMMIO's TileLang builds no "
                         f"layout for a symbolic one)")
    try:
        hier = make_hierarchical_layout(hdims, hstrides, hgroups)
    except (TypeError, ValueError) as e:
        raise ValueError(f"T.MeshTensor: {e}") from None
    if hier.logical_shape != tuple(int(n) for n in shape):
        raise ValueError(f"T.MeshTensor: hierarchical_dims {hier.hdims} grouped by "
                         f"{hier.groups} make shape {hier.logical_shape}, the tensor's is "
                         f"{tuple(int(n) for n in shape)}")
    return hier


def _affine(n: Any) -> tuple[tirx.Var, int, int] | None:
    """``(v, a, b)`` when ``n`` is ``a * v + b`` of one integer symbolic size ``v`` with
    ``a >= 1`` (the upstream's ``m * nrows``), else ``None``."""
    if not isinstance(n, tirx.PrimExpr):
        return None
    free: list = []
    tirx.stmt_functor.post_order_visit(
        tirx.Evaluate(n), lambda x: free.append(x) if isinstance(x, tirx.Var) else None)
    names = {v.name for v in free}
    if len(names) != 1 or not str(free[0].dtype).startswith("int"):
        return None
    coef = arith.detect_linear_equation(n, [free[0]])
    if len(coef) != 2 or static_int(coef[0]) is None or static_int(coef[1]) is None:
        return None
    a, b = static_int(coef[0]), static_int(coef[1])
    return (free[0], a, b) if a >= 1 else None


def _dim_text(d: Any) -> int | str:
    """A dim of a ``T.MeshTensor`` in its record: an int, a size's name, or ``a * size
    + b`` as ``"m*4+0"``."""
    if static_int(d) is not None:
        return int(static_int(d))
    if isinstance(d, tirx.Var):
        return d.name
    v, a, b = _affine(d)  # type: ignore[misc]
    return f"{v.name}*{a}{b:+d}"


def _mesh_dim(n: Any, dims: Sequence[Any]) -> Any:
    """A dim of a ``T.MeshTensor``: a non-negative int, a symbolic size (a
    ``T.dynamic`` variable) the kernel binds from the caller's tensor when it runs, or
    ``a * size + b`` of one (the size is then read back from the caller's dim)."""
    s = static_int(n)
    if s is not None and not isinstance(n, bool) and s >= 0:
        return s
    if isinstance(n, tirx.Var) and str(n.dtype).startswith("int"):
        return n
    if _affine(n) is not None:
        return n
    raise ValueError(f"T.MeshTensor: shape {tuple(str(d) for d in dims)}: dim {n} must be a "
                     f"non-negative int, a symbolic size (T.dynamic('m')) or a * m + b of "
                     f"one, which the kernel reads back from the caller's tensor; {n} "
                     f"cannot be read back from a tensor's shape: name the size it is and "
                     f"pass that")


#: modules whose reads of a parameter's ``shape`` are TileLang's (or ours), not the kernel's
_INTERNAL = ("tilelang", "tvm", "tvm_ffi")
_SHAPE_MESSAGE = ("MeshTensor.shape is ambiguous. Use `.global_shape` or `.local_shape` "
                  "instead (SUNMMIO's TileLang; kernels written for the older API that "
                  "read `A.shape` as the core's slot shape: "
                  "`tm.enable(..., legacy_shape=True)`)")
_MESH_BUFFER_CLASSES: dict = {}


def _reads_for_tilelang(module: str) -> bool:
    top = module.split(".")[0]
    return top in _INTERNAL or (top == "meshtensor"
                                and not module.startswith("meshtensor.tilelang.kernels"))


def _mesh_buffer_class(base: type) -> type:
    """``base`` (TVM's ``Buffer``) whose ``shape`` the kernel's own code cannot read:
    SUNMMIO's ``MeshTensorValue`` raises "ambiguous" there, while TileLang's builder
    (and ours) keep reading the slot shape of the same buffer."""
    cls = _MESH_BUFFER_CLASSES.get(base)
    if cls is None:
        stock = base.shape

        def shape(self: Any) -> Any:
            import sys
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if _reads_for_tilelang(caller):
                return stock.__get__(self)
            raise AttributeError(_SHAPE_MESSAGE)

        cls = type(base.__name__, (base,), {"__slots__": (), "shape": property(shape),
                                            "__module__": base.__module__})
        _MESH_BUFFER_CLASSES[base] = cls
    return cls


def _building_params() -> dict:
    """``{parameter name: (buffer, MeshTensorType)}`` of the kernel being built."""
    from tilelang.language.eager.builder import Builder
    b = Builder.current()
    return {} if b is None else getattr(b, "_meshtensor_params", {})


def mesh_tensor_of(buffer: Any) -> MeshTensorType | None:
    """The ``T.MeshTensor`` annotation of a parameter of the kernel being built."""
    if isinstance(buffer, MeshTensorType):
        return buffer
    if not isinstance(buffer, tirx.Buffer):
        return None
    for buf, t in _building_params().values():
        if buf.same_as(buffer):
            return t
    return None


def _need(buffer: Any, what: str) -> MeshTensorType:
    t = mesh_tensor_of(buffer)
    if t is None:
        name = getattr(buffer, "name", type(buffer).__name__)
        raise AttributeError(f"{what}: {name!r} is not a T.MeshTensor parameter of the kernel "
                             f"being built (only those have global/local/rank shapes)")
    return t


def get_local_extent(mesh_tensor: Any, cid: Any = None, *, rank_id: Any = None
                     ) -> tuple[Any, ...]:
    """``T.get_local_extent(A, cid)``: the valid extent of ``T.MeshTensor`` ``A`` on
    core ``cid`` (the running core when ``None``)."""
    return _need(mesh_tensor, "T.get_local_extent").get_local_extent(cid, rank_id)


def get_rank_extent(mesh_tensor: Any, rank_id: Any) -> tuple[int, ...]:
    """``T.get_rank_extent(A, rank)``: one chip's valid extent of ``A``."""
    return _need(mesh_tensor, "T.get_rank_extent").get_rank_extent(rank_id)


def _buffer_properties() -> dict[str, Any]:
    """What a ``T.MeshTensor`` parameter has inside the kernel, on TVM's Buffer."""
    return {
        "global_shape": property(lambda b: _need(b, "global_shape").global_shape,
                                 doc="A T.MeshTensor parameter's global shape."),
        "local_shape": property(lambda b: _need(b, "local_shape").local_shape,
                                doc="A T.MeshTensor parameter's per-core slot shape."),
        "rank_shape": property(lambda b: _need(b, "rank_shape").rank_shape,
                               doc="A T.MeshTensor parameter's per-chip shape."),
        "get_local_extent": lambda b, cid=None, rank_id=None: _need(
            b, "get_local_extent").get_local_extent(cid, rank_id),
        "get_rank_extent": lambda b, rank_id: _need(b, "get_rank_extent").get_rank_extent(
            rank_id),
    }


# -- operands -------------------------------------------------------------------------------------
def _memory(op: str, side: str, buf: tirx.Buffer) -> None:
    """A destination is a core's on-chip buffer; a source one, or global memory (a
    ``T.MeshTensor`` slice: the sending core's part; another kernel parameter: the
    sending core reads it from DRAM and multicasts it)."""
    scope = buf.scope()
    if scope == "global":
        if side == "src":
            return
        raise ValueError(f"{op}: {side} {buf.name!r} is a global-memory buffer; the "
                         f"destination is a core's on-chip buffer (T.alloc_shared) and the "
                         f"source one or global memory (a T.MeshTensor or T.Tensor region)")
    if not _per_core_scope(scope):
        raise ValueError(f"{op}: {side} {buf.name!r} has scope {scope!r}; comm ops move "
                         f"T.alloc_shared / T.alloc_local buffers")


@dataclass
class _Operand:
    """One comm operand as the upstream normalises it: ``kind`` ``"buffer"``,
    ``"region"`` (an explicit slice) or ``"load"`` (``A[i, j]``: a start whose extents
    come from the other operand)."""

    kind: str
    buffer: tirx.Buffer
    mins: list
    extents: list | None


def _operand(op: str, side: str, x: Any) -> _Operand:
    if isinstance(x, tirx.Buffer):
        return _Operand("buffer", x, [tirx.IntImm("int32", 0)] * len(x.shape), list(x.shape))
    if isinstance(x, tirx.BufferRegion):
        return _Operand("region", x.buffer, [r.min for r in x.region],
                        [r.extent for r in x.region])
    if isinstance(x, tirx.BufferLoad) and _STATE.compat != "2025":
        return _Operand("load", x.buffer, list(x.indices), None)
    raise TypeError(f"{op}: {side} must be a per-core buffer or a region of one "
                    f"(S[0:16, 0:8]){'' if _STATE.compat == '2025' else ' or an element S[i, j]'}"
                    f", got {type(x).__name__}")


def _peer_extents(o: _Operand, peer: Sequence[Any]) -> list:
    """A load's extents from the other operand's: its trailing ones, leading 1s."""
    rank = len(o.mins)
    peer = list(peer)
    if len(peer) < rank:
        return [tirx.IntImm("int32", 1)] * (rank - len(peer)) + peer
    return peer[-rank:]


def _clip(op: str, o: _Operand, extents: list) -> list:
    """Extents clipped to the buffer (an explicit slice past its edge: with the
    upstream's warning); a start outside it is a ValueError."""
    out = []
    for d, (m, e, n) in enumerate(zip(o.mins, extents, o.buffer.shape)):
        mv, ev, nv = static_int(m), static_int(e), static_int(n)
        if mv is not None and nv is not None and (mv < 0 or mv >= nv):
            raise ValueError(f"{op} region starts outside buffer shape: {o.buffer.name}"
                             f"[dim={d}], min={m}, extent={e}, shape={n}")
        if None not in (mv, ev, nv) and mv + ev > nv:
            if o.kind == "region":
                warnings.warn(f"{op} explicit BufferRegion exceeds buffer shape and will be "
                              f"clipped: {o.buffer.name}[dim={d}], min={m}, extent={e}, "
                              f"shape={n}", stacklevel=4)
            out.append(tirx.IntImm("int32", nv - mv))
        else:
            out.append(e)
    return out


def _static(op: str, side: str, o: _Operand, extents: list) -> tuple[int, ...]:
    static = tuple(static_int(e) for e in extents)
    if None in static:
        raise ValueError(f"{op}: {side} {o.buffer.name!r} has symbolic extents "
                         f"{[str(e) for e in extents]}; comm regions need static extents")
    return static  # type: ignore[return-value]


def _fmt(ext: Sequence[int]) -> str:
    return "[" + ", ".join(str(e) for e in ext) + "]"


def _match(op: str, src: Sequence[int], dst: Sequence[int], exact: bool) -> list[int]:
    """The destination extents paired with the source's (the upstream's rules): two
    whole buffers match exactly (leading 1s aside); otherwise unit dims are squeezed,
    each source extent must fit and the destination shrinks to it."""
    src, dst = list(src), list(dst)
    if exact:
        n = min(len(src), len(dst))
        for who, ext in (("src", src), ("dst", dst)):
            extra = ext[:len(ext) - n]
            if any(e != 1 for e in extra):
                raise ValueError(f"{op} rank mismatch: {who} has non-1 extra leading "
                                 f"dimension; src={_fmt(src)}, dst={_fmt(dst)}")
        if src[len(src) - n:] != dst[len(dst) - n:]:
            raise ValueError(f"{op} extent mismatch: exact match is required for "
                             f"Buffer-to-Buffer operation; src={_fmt(src)}, dst={_fmt(dst)}")
        return dst
    if len(src) == len(dst) and all(s == d or s == 1 or (d != 1 and s <= d)
                                    for s, d in zip(src, dst)):
        pairs = list(zip(range(len(src)), range(len(dst))))
    else:
        sa = [d for d, e in enumerate(src) if e != 1]
        da = [d for d, e in enumerate(dst) if e != 1]
        if len(sa) != len(da):
            raise ValueError(f"{op} rank mismatch: mixed-region operation requires the same "
                             f"number of non-1 extents after squeezing unit dimensions; "
                             f"src={_fmt(src)}, dst={_fmt(dst)}")
        pairs = list(zip(sa, da))
    out = list(dst)
    for s, d in pairs:
        if src[s] > dst[d]:
            raise ValueError(f"{op} extent mismatch: src extent is larger than dst extent at "
                             f"matched axis; src dim {s} extent={src[s]}, dst dim {d} extent="
                             f"{dst[d]}; src={_fmt(src)}, dst={_fmt(dst)}")
        out[d] = src[s]
    for d in range(len(out)):
        if d not in [q for _, q in pairs]:
            out[d] = 1
    return out


def _encoded(o: _Operand, extents: Sequence[int], side: str) -> tirx.Call:
    access = "r" if side == "src" else "w"
    return _tl_region(tirx.BufferLoad(o.buffer, o.mins), access, *extents)  # type: ignore


def _numel(ext: Sequence[int]) -> int:
    return int(np.prod(ext, dtype=np.int64))


def _dtypes(op: str, a: tirx.Buffer, b: tirx.Buffer) -> None:
    if a.dtype != b.dtype:
        raise ValueError(f"Source and destination buffer dtypes must match for {op}. Got "
                         f"{a.dtype} vs {b.dtype}.")


def _size(size: Any, n: int, what: str) -> int:
    """The element count a transfer moves: ``size``, or all ``n`` when -1."""
    if not _is_int(size) or size < -1:
        raise ValueError("size must be an integer >= -1.")
    if size > n:
        raise ValueError(f"size {size} exceeds {what} buffer size {n}.")
    return n if size == -1 else int(size)


def _compact(op: str, s: Sequence[int], d: Sequence[int]) -> None:
    """The older fork's shape rule: same rank, each extent equal or 1 on either side,
    and no more source elements than destination elements."""
    if len(s) != len(d) or any(a != b and 1 not in (a, b) for a, b in zip(s, d)):
        raise ValueError(f"Source and destination buffer must have the same number of "
                         f"dimensions for {op}. (source {tuple(s)}, destination {tuple(d)})")
    if _numel(s) > _numel(d):
        raise ValueError(f"Source buffer size larger than destination buffer size: "
                         f"{_numel(s)} vs {_numel(d)}")


def _transfer(op: str, src: Any, dst: Any, size: Any) -> tuple[tirx.Call, tirx.Call, int]:
    """A broadcast's or put's regions, normalised and checked as the upstream does (the
    older fork under ``compat="2025"``), and its element count."""
    full = f"T.comm.{op}"
    s, d = _operand(full, "src", src), _operand(full, "dst", dst)
    if s.kind == "load" and d.kind == "load":
        raise ValueError(f"{full} cannot infer extents when both operands are BufferLoad "
                         f"values.")
    for side, o in (("src", s), ("dst", d)):
        _memory(full, side, o.buffer)
    if s.kind == "load":
        d_ext = _clip(full, d, d.extents)  # type: ignore[arg-type]
        s_ext = _clip(full, s, _peer_extents(s, d_ext))
    elif d.kind == "load":
        s_ext = _clip(full, s, s.extents)  # type: ignore[arg-type]
        d_ext = _clip(full, d, _peer_extents(d, s_ext))
    else:
        s_ext, d_ext = _clip(full, s, s.extents), _clip(full, d, d.extents)  # type: ignore
    s_st, d_st = _static(full, "src", s, s_ext), _static(full, "dst", d, d_ext)
    _dtypes(op, s.buffer, d.buffer)
    if _STATE.compat == "2025":
        _compact(op, s_st, d_st)
    else:
        d_st = tuple(_match(full, s_st, d_st, s.kind == d.kind == "buffer"))
    return (_encoded(s, s_st, "src"), _encoded(d, d_st, "dst"),
            _size(size, _numel(s_st), "source"))


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


def _direction(direction: Any, op: str) -> int:
    if not isinstance(direction, str):
        raise TypeError(f"T.comm.{op}: direction must be a string (h/horizontal, "
                        f"v/vertical, a/all), got {type(direction).__name__}")
    code = DIRECTION_MAP.get(direction.lower())
    if code is None:  # (the fork's text, "Invalid direction string", kept first)
        raise ValueError(f"Invalid direction string: {direction}\n  T.comm.{op} takes "
                         f"h/horizontal (a row), v/vertical (a column) or a/all")
    return code


def _gather_operands(op: str, send: Any, recv: Any, k: int, axis: Any
                     ) -> tuple[tirx.Call, tirx.Call, tuple[int, ...], tirx.Buffer,
                                tirx.Buffer, int | None]:
    """all_gather's send and receive regions (the receive region shrinks to the
    gathered extents where it is a slice or an element, as the upstream's)."""
    full = f"T.comm.{op}"
    s, r = _operand(full, "src", send), _operand(full, "dst", recv)
    _memory(full, "src", s.buffer)
    _memory(full, "dst", r.buffer)
    if s.kind == "load" and r.kind == "load":
        raise ValueError(f"{full} cannot infer extents when both operands are BufferLoad "
                         f"values.")
    ndim = len(s.mins)
    if axis is not None:
        if not _is_int(axis) or not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} out of range for send buffer with {ndim} "
                             f"dimensions.")
        norm = axis + ndim if axis < 0 else int(axis)
        if norm not in (0, ndim - 1):
            raise ValueError(f"Only axis=0 or axis=-1 (last dim) are currently supported, "
                             f"got axis={axis} (normalized to {norm}) for {ndim}-D send "
                             f"buffer.")
        axis = norm
    if s.kind == "load":
        r_ext = _static(full, "dst", r, _clip(full, r, r.extents))  # type: ignore[arg-type]
        slot = list(r_ext[1:]) if axis is None else [
            e // k if d == axis else e for d, e in enumerate(r_ext)]
        s_ext = _static(full, "src", s, _clip(full, s, _peer_extents(s, slot)))
    else:
        s_ext = _static(full, "src", s, _clip(full, s, s.extents))  # type: ignore[arg-type]
    want = ((k,) + tuple(s_ext) if axis is None
            else tuple(e * k if d == axis else e for d, e in enumerate(s_ext)))
    if r.kind == "load":
        r_ext = _static(full, "dst", r, _clip(full, r, _peer_extents(r, want)))
    else:
        r_ext = _static(full, "dst", r, _clip(full, r, r.extents))  # type: ignore[arg-type]
    fits = len(r_ext) == len(want) and all(a >= b for a, b in zip(r_ext, want))
    exact = tuple(r_ext) == want
    if not exact and (s.kind == r.kind == "buffer" or _STATE.compat == "2025" or not fits):
        raise ValueError(f"{full}: receive buffer shape must be {list(want)} to hold "
                         f"gathered data from {k} cores, but got {list(r_ext)}.")
    return (_encoded(s, s_ext, "src"), _encoded(r, want, "dst"), tuple(s_ext), s.buffer,
            r.buffer, axis)


def _reduce_operands(op: str, buffer: Any, out: Any, dim: Any
                     ) -> tuple[tirx.Call, tirx.Call, tirx.Buffer, tirx.Buffer, int]:
    full = f"T.comm.{op}"
    s, o = _operand(full, "src", buffer), _operand(full, "dst", out)
    for side, b in (("src", s.buffer), ("dst", o.buffer)):
        if _mx.container(b) is not None:
            raise ValueError(f"{full}: {side} {b.name!r} is an MX buffer; a reduction "
                             f"combines values, and an MX buffer's are elements times "
                             f"per-group scales that no reduction of the chip requantises: "
                             f"T.mx_unpack it and reduce the values")
    _memory(full, "src", s.buffer)
    _memory(full, "dst", o.buffer)
    if s.kind == "load" and o.kind == "load":
        raise ValueError(f"{full} cannot infer extents when both operands are BufferLoad "
                         f"values.")
    rank = len(s.mins)
    if not _is_int(dim) or not -1 <= dim < rank:
        raise ValueError(f"{full}: dim {dim} out of bounds for buffer with {rank} "
                         f"dimensions.")
    dim = rank - 1 if dim == -1 else int(dim)
    if s.kind == "load":
        o_ext = list(_static(full, "dst", o, _clip(full, o, o.extents)))  # type: ignore
        full_dim = int(static_int(s.buffer.shape[dim]) or 1)
        s_guess = (o_ext[:dim] + [full_dim] + o_ext[dim:] if len(o_ext) == rank - 1
                   else o_ext[:dim] + [full_dim] + o_ext[dim + 1:])
        s_ext = _static(full, "src", s, _clip(full, s, s_guess))
    else:
        s_ext = _static(full, "src", s, _clip(full, s, s.extents))  # type: ignore[arg-type]
    drop = tuple(e for d, e in enumerate(s_ext) if d != dim)
    keep = tuple(1 if d == dim else e for d, e in enumerate(s_ext))
    if o.kind == "load":
        o_ext = _static(full, "dst", o, _clip(full, o, _peer_extents(o, drop)
                                              if len(o.mins) < rank else list(keep)))
    else:
        o_ext = _static(full, "dst", o, _clip(full, o, o.extents))  # type: ignore[arg-type]
    if tuple(o_ext) not in (drop, keep):
        shrink = drop if len(o_ext) == len(drop) else keep
        if (s.kind == o.kind == "buffer" or _STATE.compat == "2025" or len(o_ext) != len(shrink)
                or any(a < b for a, b in zip(o_ext, shrink))):
            raise ValueError(f"{full}: invalid reduce output shape, buffer shape is "
                             f"{list(s_ext)}, "
                             f"dim is {dim}, output shape is {list(o_ext)}, expected shapes "
                             f"are {list(drop)} or {list(keep)}")
        o_ext = shrink
    return (_encoded(s, s_ext, "src"), _encoded(o, o_ext, "dst"), s.buffer, o.buffer, dim)


# -- T.comm ------------------------------------------------------------------------------------
class TilelangMeshComm:
    """``T.comm``: SUNMMIO's comm ops and core helpers, on the mesh of :func:`enable`.

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
    def core_to_id(core_id: Any, name: str = "core") -> Any:
        """A linear core id or ``(row, col)`` as a linear id (``row * ncols + col``):
        ints are range-checked, expressions kept."""
        mesh = enabled_mesh()
        exprs = _core_exprs(core_id, name, mesh)
        lin = _linear(exprs, mesh)
        s = static_int(arith.Analyzer().simplify(lin))
        return lin if s is None else s

    @staticmethod
    def core_tuple_to_id(core_id: Any) -> Any:
        """``row * ncols + col`` (an int, or an expression for expressions)."""
        if not isinstance(core_id, (tuple, list)) or len(core_id) != 2:
            raise ValueError("core_id must be a tuple of (row, col).")
        return TilelangMeshComm.core_to_id(tuple(core_id), "core_id")

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
        """The linear id of the core running the program (inside ``T.Kernel``): the
        block index of a launch of one program per core, ``bx + gx * by`` of a grid."""
        from tilelang.language.kernel import KernelLaunchFrame
        frame = KernelLaunchFrame.Current() if hasattr(KernelLaunchFrame, "Current") else None
        try:
            b = T.get_block_bindings() if frame is not None else []
        except Exception:  # noqa: BLE001 - TileLang raises its own kinds outside a kernel
            b = []
        if not b:
            raise ValueError("T.comm.current_core() must be called inside T.Kernel() (one "
                             "program per core) or a T.Kernel grid")
        lin: Any = b[-1]
        for d in range(len(b) - 2, -1, -1):
            lin = lin * frame.get_block_extent(d) + b[d]
        return lin

    @staticmethod
    def broadcast(src: Any, dst: Any, src_core: Any, direction: str = "all",
                  size: int = -1) -> tirx.Call | None:
        """Every core of ``src_core``'s row (``"h"``), column (``"v"``) or mesh
        (``"all"``), ``src_core`` included, gets the first ``size`` elements (all for
        -1, row-major) of ``src_core``'s ``src`` into the first elements of its ``dst``;
        other cores keep ``dst``. ``src`` may be global memory (read by ``src_core``)."""
        mesh = enabled_mesh()
        s_call, d_call, n = _transfer("broadcast", src, dst, size)
        code = _direction(direction, "broadcast")
        core = _core_exprs(src_core, "src_core", mesh)
        scales = _mx.comm_scales("T.comm.broadcast", src, dst, size)
        if scales is not None:  # the elements' scales move alike (same phase)
            TilelangMeshComm.broadcast(scales[0], scales[1], src_core, direction, scales[2])
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
        scales = _mx.comm_scales("T.comm.put", src, dst, size)
        if scales is not None:
            TilelangMeshComm.put(scales[0], scales[1], src_core, dst_core, scales[2])
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
        code = _direction(direction, op)
        k = int(np.prod([mesh.shape[a] for a in _DIR_AXES[code]]))
        s_call, d_call, s_ext, s_buf, d_buf, axis = _gather_operands(op, send_buffer,
                                                                     recv_buffer, k, axis)
        _dtypes(op, s_buf, d_buf)
        n = _size(size, _numel(s_ext), "send")
        if not _is_int(src_offset_byte) or src_offset_byte < 0:
            raise ValueError("src_offset_byte must be a non-negative integer.")
        if src_offset_byte:
            raise ValueError(f"T.comm.all_gather: src_offset_byte={src_offset_byte} is the "
                             f"fork's compiler-internal offset; kernels pass 0 (the default)")
        params = {"size": n, "stacked": axis is None, "axis": 0 if axis is None else axis}
        scales = _mx.comm_scales("T.comm.all_gather", send_buffer, recv_buffer, size, axis)
        if scales is not None:
            TilelangMeshComm.all_gather(scales[0], scales[1], direction, scales[2], axis)
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
        s_call, d_call, s_buf, d_buf, dim = _reduce_operands(op, buffer, out, dim)
        if not isinstance(reduce_type, str) or reduce_type.lower() not in REDUCE_TYPE_LIST:
            shown = reduce_type.lower() if isinstance(reduce_type, str) else reduce_type
            raise ValueError(f"Reduction op must be one of {list(REDUCE_TYPE_LIST)}, but got "
                             f"{shown}.")
        kind = reduce_type.lower()
        code = _direction(direction, "all_reduce")
        if clear not in (True, False):
            raise ValueError("clear must be a boolean value.")
        _dtypes(op, s_buf, d_buf)
        if REDUCTIONS[kind].integer_only and not str(s_buf.dtype).startswith(("int", "uint")):
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


# -- T.Kernel and T.annotate_layout as SUNMMIO's TileLang takes them ---------------------------
def _kernel_wrapper(stock: Any) -> Any:
    def Kernel(*blocks: Any, **kw: Any) -> Any:  # noqa: N802 (TileLang's name)
        """``T.Kernel()`` with no extent runs one program per core of the enabled mesh
        (its variable the linear core id); anything else is TileLang's ``T.Kernel``."""
        if not blocks and _STATE.mesh is not None:
            blocks = (_STATE.mesh.size,)
        if kw.get("is_cpu"):
            raise ValueError("T.Kernel(..., is_cpu=True) is the fork's host-side loop, not "
                             "a program on the mesh's cores; write the loop with T.serial "
                             "inside a T.Kernel()")
        kw.pop("is_cpu", None)
        return stock(*blocks, **kw)

    Kernel.__doc__ = (Kernel.__doc__ or "") + "\n\n" + (stock.__doc__ or "")
    Kernel._meshtensor = stock  # type: ignore[attr-defined]
    return Kernel


def _annotate_layout_wrapper(stock: Any) -> Any:
    def annotate_layout(layout_map: dict) -> Any:
        """TileLang's ``T.annotate_layout``; the fork's layouts (``make_zz_layout``,
        ``make_blockwise_zz_layout`` ...) are recorded in the kernel's
        ``meshtensor.layouts`` attribute instead (a layout changes where the chip keeps
        each element, not a value)."""
        ours = (ForkLayout, HierarchicalLayout)
        fork = {b: lay for b, lay in layout_map.items() if isinstance(lay, ours)}
        rest = {b: lay for b, lay in layout_map.items() if not isinstance(lay, ours)}
        if fork:
            from tilelang.language.eager.builder import Builder
            b = Builder.current()
            if b is not None:
                rec = b.__dict__.setdefault("_meshtensor_layouts", {})
                rec.update({str(buf.name): str(lay) for buf, lay in fork.items()})
                objs = b.__dict__.setdefault("_meshtensor_layout_objs", {})
                objs.update({str(buf.name): lay for buf, lay in fork.items()})
        return stock(rest) if rest else None

    annotate_layout._meshtensor = stock  # type: ignore[attr-defined]
    return annotate_layout


#: the annotation on a ``T.gemm`` whose ``transpose_B=True`` named SUNMMIO's operand mode
SUNMMIO_TRANSPOSE_B = "meshtensor.sunmmio_transpose_b"


def _evaluate_wrapper(stock: Any) -> Any:
    def evaluate(value: Any, *args: Any, **kw: Any) -> Any:
        """TileLang's ``T.evaluate``, which also takes the ``None`` a ``T.dist`` or
        ``T.comm`` op returns once it has emitted its statement: the upstream's ops
        return their call, and its kernels write ``T.evaluate(T.dist.put(...))``; the
        statement is already in place, so nothing more is emitted."""
        if value is None:
            return None
        return stock(value, *args, **kw)

    evaluate._meshtensor = True  # type: ignore[attr-defined]
    return evaluate


def _gemm_wrapper(stock: Any) -> Any:
    def gemm(A: Any, B: Any, C: Any, transpose_A: bool = False, transpose_B: bool = False,
             *args: Any, **kw: Any) -> Any:
        """TileLang's ``T.gemm``, with SUNMMIO's reading of ``transpose_B=True``: the
        MMA's transposed operand mode, which still multiplies by the ``B(k, j)`` panel
        (the upstream's SUMMA) where ``B`` has the panel's shape ``(K, N)`` and not the
        transposed one; a ``B`` of shape ``(N, K)`` is transposed as in stock TileLang
        (the upstream's attention kernels: ``Q @ K^T``). A square ``B`` fits both: the
        current upstream transposes it (its SUMMA no longer passes the flag);
        ``compat="2025"`` reads it as the panel, as the upstream's older SUMMA meant.
        ``PrepareTilelangMesh`` gives a kernel without SUNMMIO names the stock meaning."""
        A, B = _mx.gemm_operands(A, B)
        if transpose_B:
            from tilelang.utils.language import retrieve_shape, to_buffer_region
            try:
                a = retrieve_shape(to_buffer_region(A))
                b = retrieve_shape(to_buffer_region(B))
                c = retrieve_shape(to_buffer_region(C))
                k = static_int(a[-2] if transpose_A else a[-1])
                bb = (static_int(b[-2]), static_int(b[-1]))
                panel = bb == (k, static_int(c[-1]))
                transposed = bb == (static_int(c[-1]), k)
            except Exception:  # noqa: BLE001 - leave unusual operands to TileLang
                panel = transposed = False
            if panel and (not transposed or _STATE.compat == "2025"):
                ann = dict(kw.pop("annotations", None) or {})
                ann[SUNMMIO_TRANSPOSE_B] = 1
                kw["annotations"] = ann
                transpose_B = False
        return stock(A, B, C, transpose_A, transpose_B, *args, **kw)

    gemm.__doc__ = (gemm.__doc__ or "") + "\n\n" + (stock.__doc__ or "")
    gemm._meshtensor = stock  # type: ignore[attr-defined]
    return gemm


def _same_shape(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two region shapes are equal: their extents may be expressions (a tail
    region's ``T.min(block, total - start)``), built as separate objects, so they are
    compared as values, not as Python objects."""
    if len(a) != len(b):
        return False
    ana = arith.Analyzer()
    return all(ana.can_prove_equal(x, y) for x, y in zip(a, b))


def _reduce_wrapper(stock: Any) -> Any:
    def reduce(buffer: Any, out: Any, reduce_type: str, dim: int, clear: bool,
               batch: int = 1, annotations: Any = None) -> Any:
        """TileLang's reduction; with an on-chip operand in a ``shared`` scope (SUNMMIO's
        ``shared.rsram`` ..., which TileLang's CPU lowering cannot stage through
        fragments) it is one reduction of the two buffers, which ``PrepareTilelangMesh``
        keeps in core-private memory."""
        from tilelang.language.common import evaluate
        from tilelang.utils.language import retrieve_shape, to_buffer_region, to_tile_region

        src_b = to_buffer_region(buffer).buffer
        out_b = to_buffer_region(out).buffer
        if _STATE.mesh is None or not any(str(b.scope()).startswith("shared")
                                          for b in (src_b, out_b)):
            return stock(buffer, out, reduce_type, dim, clear, batch, annotations)
        if reduce_type in ("bitand", "bitor", "bitxor") and not str(out_b.dtype).startswith(
                ("int", "uint", "bool")):
            raise ValueError(f"reduce_{reduce_type} requires an integer/bool buffer, got dtype "
                             f"{out_b.dtype}")
        shape = list(retrieve_shape(buffer))
        out_shape = list(retrieve_shape(out))
        d = dim + len(shape) if dim < 0 else dim
        want = [shape[:d] + shape[d + 1:], shape[:d] + [1] + shape[d + 1:]]
        if not any(_same_shape(out_shape, w) for w in want):
            raise ValueError(f"Invalid reduce output shape, buffer shape is {shape}, dim is "
                             f"{dim}, output shape is {out_shape}, expected shapes are "
                             f"{want[0]} or {want[1]}")
        if not clear and reduce_type in ("abssum", "absmax"):
            # SUNMMIO's lowering folds |out|, not out: |out| + sum|x|, max(|out|, |x|)
            reg = to_buffer_region(out)
            _absolute(reg.buffer, [r.min for r in reg.region], [r.extent for r in reg.region])
        if str(src_b.dtype) != str(out_b.dtype):
            # The upstream's reduction converts each element to the output's dtype and
            # accumulates there (ReduceOpNode::MakeReduce: Cast(acc dtype, element)):
            # the operand is staged, converted, in a buffer of its own. (A region of a
            # buffer is reduced as that region by RegionReductions on target c.)
            copy = getattr(T.copy, "_meshtensor", T.copy)
            tmp = T.alloc_shared(shape, str(out_b.dtype), scope=src_b.scope())
            evaluate(copy(buffer, tmp))
            buffer = tmp
        return evaluate(tirx.call_intrin(
            "handle", tirx.op.Op.get("tl.tileop.reduce"),
            to_tile_region(buffer, access_type="r"), to_tile_region(out, access_type="w"),
            reduce_type, d, clear, annotations=annotations or {}))

    reduce._meshtensor = stock  # type: ignore[attr-defined]
    return reduce


def _shifted(mins: Sequence[Any], idx: Any) -> tuple:
    idx = [idx] if isinstance(idx, tirx.PrimExpr) else list(idx)
    return tuple(m + v for m, v in zip(mins, idx))


@T.macro
def _absolute(buf: Any, mins: Any, extents: Any) -> None:
    """``buf``'s region at ``mins`` of ``extents`` replaced by its absolute value."""
    for idx in T.grid(*extents):
        # (a select: TileLang's C back end has no fabs of a narrow float; 0 - x makes
        # either zero +0, as fabs does)
        buf[_shifted(mins, idx)] = T.if_then_else(
            buf[_shifted(mins, idx)] <= 0, T.Cast(buf.dtype, 0) - buf[_shifted(mins, idx)],
            buf[_shifted(mins, idx)])


def _abssum_wrapper(stock: Any) -> Any:
    def reduce_abssum(buffer: Any, out: Any, dim: int = -1, clear: bool = True,
                      batch: int = 1, annotations: Any = None) -> None:
        """TileLang's ``T.reduce_abssum``, with SUNMMIO's ``clear`` (``False``: add to
        what ``out`` holds; on SUNMMIO scopes its absolute value, as the chip's
        lowering folds it)."""
        from tilelang.language import reduce_op
        from tilelang.utils.language import retrieve_shape

        d = dim + len(retrieve_shape(buffer)) if dim < 0 else dim
        reduce_op.reduce(buffer, out, "abssum", d, clear, batch=batch,
                         annotations=annotations)

    reduce_abssum.__doc__ = (reduce_abssum.__doc__ or "") + "\n\n" + (stock.__doc__ or "")
    reduce_abssum._meshtensor = stock  # type: ignore[attr-defined]
    return reduce_abssum


def Tiles(domain: Any, parallel: bool = False, *_: Any, **__: Any) -> Any:  # noqa: N802
    """SUNMMIO's ``T.Tiles(buffer_or_shape, parallel=...)``: an element-wise loop nest
    over a buffer's (or a shape's) every index, which the chip runs tile by tile on its
    vector core. Its body is element-wise, so every order computes the same values: it
    runs here as ``T.grid`` over the shape (the tile view of ``T.annotate_tileview``
    changes how the chip walks it, not what it computes)."""
    shape = domain.shape if hasattr(domain, "shape") else domain
    shape = [shape] if isinstance(shape, (int, tirx.PrimExpr)) else list(shape)
    return T.grid(*shape)


def annotate_tileview(tileviews: dict) -> None:
    """SUNMMIO's ``T.annotate_tileview``: how the chip partitions a buffer into tiles
    for ``T.Tiles`` loops; recorded in the kernel's ``meshtensor.tileviews`` attribute
    (it changes no value)."""
    from tilelang.language.eager.builder import Builder
    b = Builder.current()
    if b is not None:
        rec = b.__dict__.setdefault("_meshtensor_tileviews", {})
        rec.update({str(getattr(buf, "name", buf)): str(v) for buf, v in tileviews.items()})


def make_tileview(buffer: Any, tile_size: Any = None, index_map: Any = None, *_: Any,
                  **__: Any) -> ForkLayout:
    """The fork's tile view maker (``tilelang.layout.make_tileview``), recorded."""
    return ForkLayout("tileview", _shape_of(buffer),
                      None, None if tile_size is None else tuple(tile_size))


# -- TileLang's builder: T.MeshTensor parameters and their records ----------------------------
def _install_builder_hooks() -> None:
    """Teach TileLang's kernel builder the ``T.MeshTensor`` annotation: its parameter is
    the slot-shaped buffer, and the kernel gets the parameters' records
    (``MeshParam``) and the recorded layouts as function attributes (one builder per
    kernel: nothing outlives the kernel it describes)."""
    from tilelang.language.eager import builder as bmod

    if getattr(bmod.Builder.prim_func_arg, "_meshtensor", False):
        return
    stock_arg = bmod.Builder.prim_func_arg
    stock_attrs = bmod._patch_prim_func_attrs

    def prim_func_arg(self: Any, name: str, value: Any) -> Any:
        if isinstance(value, _MeshTensorArg):
            buf = stock_arg(self, name, value.buffer)
            params = self.__dict__.setdefault("_meshtensor_params", {})
            params[name] = (buf, value.type)
            if not _STATE.legacy_shape:  # the kernel's code sees SUNMMIO's value (no shape)
                buf.__class__ = _mesh_buffer_class(type(buf))
            if value.type.mx is not None:  # its scale grid: the parameter after it
                kind, lk, st = value.type.mx
                sbuf = stock_arg(self, f"{name}_scales", T.Tensor(st.local_shape, st.dtype))
                params[f"{name}_scales"] = (sbuf, st)
                self.__dict__.setdefault("_meshtensor_mx", []).append(
                    (buf, kind, [sbuf, lk]))
                self.__dict__.setdefault("_meshtensor_mx_params", []).append(name)
            return buf
        return stock_arg(self, name, value)

    def patch_attrs(pf: Any, builder: Any) -> Any:
        pf = stock_attrs(pf, builder)
        ranks = [str(v.name) for v in pf.params if _dist.is_rank_var(v)]
        if len(ranks) > 1:  # refused when the kernel is built, T.dist op or not (upstream)
            raise ValueError(f"T.prim_func: a PrimFunc may have at most one T.dist.RankId "
                             f"parameter, got {ranks}")
        params = getattr(builder, "_meshtensor_params", None)
        if params:
            index = {}
            for i, v in enumerate(pf.params):
                buf = pf.buffer_map.get(v)
                if buf is not None:
                    index[str(buf.name)] = i
            recs = {}
            for name, (buf, t) in params.items():
                i = index.get(str(buf.name))
                if i is not None:
                    recs[i] = t.param(str(buf.name))
            pf = with_mesh_params(pf, recs)
            mxp = getattr(builder, "_meshtensor_mx_params", None)
            if mxp:  # (elements, scales) parameter indices of each MX T.MeshTensor
                pairs = [[index[str(params[n][0].name)],
                          index[str(params[f"{n}_scales"][0].name)]] for n in mxp
                         if str(params[n][0].name) in index]
                pf = pf.with_attr(MX_PARAMS_ATTR, pairs)
        layouts = getattr(builder, "_meshtensor_layouts", None)
        if layouts:
            pf = pf.with_attr("meshtensor.layouts", dict(layouts))
        views = getattr(builder, "_meshtensor_tileviews", None)
        if views:
            pf = pf.with_attr("meshtensor.tileviews", dict(views))
        return pf

    prim_func_arg._meshtensor = True  # type: ignore[attr-defined]
    bmod.Builder.prim_func_arg = prim_func_arg
    bmod._patch_prim_func_attrs = patch_attrs
    for name, prop in _buffer_properties().items():
        if not hasattr(tirx.Buffer, name):
            setattr(tirx.Buffer, name, prop)


# -- enable() and the message for kernels that forgot it -------------------------------------------
def _ours() -> dict[str, Any]:
    return {"comm": comm, "MeshTensor": MeshTensor, "MeshShardingPolicy": MeshShardingPolicy,
            "MeshReplicationType": MeshReplicationType, "placement": _placement.namespace,
            "mesh_nrows": mesh_nrows, "mesh_ncols": mesh_ncols, "mesh_ncores": mesh_ncores,
            "nrows": mesh_nrows, "ncols": mesh_ncols, "get_local_extent": get_local_extent,
            "get_rank_extent": get_rank_extent, "dist": _dist, "Tiles": Tiles,
            "annotate_tileview": annotate_tileview, "mxfp8": _mx.MXFP8, "mxfp4": _mx.MXFP4,
            "mx_pack": _mx.mx_pack, "mx_unpack": _mx.mx_unpack}


def _install(module: Any, names: dict[str, Any]) -> None:
    for name, value in names.items():
        if name not in vars(module):
            setattr(module, name, value)


def world(world_size: int) -> Any:
    """``with tm.world(W):`` builds ``T.dist`` kernels for ``W`` ranks (see
    :func:`meshtensor.tilelang.language.dist.world`)."""
    return _dist.world(world_size)


def enable(mesh: Any = (4, 4), compat: str | None = None, *,
           legacy_shape: bool = False) -> Mesh:
    """Make kernels written for SUNMMIO's TileLang parse and run here: set the target
    mesh ``(nrows, ncols)`` and install its names on ``tilelang.language`` (and the
    driver and layout helpers) where they are absent; ``T.Kernel`` and
    ``T.annotate_layout`` accept what the fork's accept. ``compat="2025"`` applies the
    older fork's rules where the current TileLang changed them (module docstring).
    Kernel code reading ``A.shape`` of a ``T.MeshTensor`` parameter gets SUNMMIO's
    ``AttributeError`` ("ambiguous": use ``A.global_shape`` or ``A.local_shape``);
    ``legacy_shape=True`` (implied by ``compat="2025"``) gives the older reading, the
    core's slot shape. Idempotent; a name TileLang already has is left alone.
    Returns the mesh (axes ``row``, ``col``).

    >>> enable(mesh=(2, 4))
    Mesh({'row': 2, 'col': 4})
    >>> import tilelang.language as T
    >>> T.comm.get_target_mesh_shape(), int(T.mesh_ncores())
    ({'nrow': 2, 'ncol': 4}, 8)
    """
    m = _mesh_of(mesh, "tilelang_mesh.enable")
    if compat not in COMPAT:
        raise ValueError(f"tilelang_mesh.enable: compat must be one of {list(COMPAT)}, got "
                         f"{compat!r}")
    if not isinstance(legacy_shape, bool):
        raise TypeError(f"tilelang_mesh.enable: legacy_shape must be a bool, got "
                        f"{legacy_shape!r}")
    _STATE.mesh = m
    _STATE.compat = compat
    _STATE.legacy_shape = legacy_shape or compat == "2025"
    _install(T, _ours())
    if not hasattr(T.Kernel, "_meshtensor"):
        T.Kernel = _kernel_wrapper(T.Kernel)
    if not hasattr(T.annotate_layout, "_meshtensor"):
        T.annotate_layout = _annotate_layout_wrapper(T.annotate_layout)
    if not hasattr(T.gemm, "_meshtensor"):
        T.gemm = _gemm_wrapper(T.gemm)
    if not hasattr(T.evaluate, "_meshtensor"):
        T.evaluate = _evaluate_wrapper(T.evaluate)
    if not hasattr(T.copy, "_meshtensor"):
        T.copy = _mx.copy_wrapper(T.copy)
    for alloc in ("alloc_shared", "alloc_local", "alloc_fragment", "alloc_buffer"):
        stock = getattr(T, alloc, None)
        if stock is not None and not hasattr(stock, "_meshtensor"):
            setattr(T, alloc, _mx.alloc_wrapper(stock))
    import tilelang.language.reduce_op as reduce_op
    if not hasattr(reduce_op.reduce, "_meshtensor"):
        reduce_op.reduce = _reduce_wrapper(reduce_op.reduce)
    if not hasattr(T.reduce_abssum, "_meshtensor"):
        T.reduce_abssum = _abssum_wrapper(T.reduce_abssum)
    _install_builder_hooks()
    import tilelang.carver.arch.driver as driver
    import tilelang.layout as layout
    _install(driver, {"get_sunmmio_device_mesh_config": get_sunmmio_device_mesh_config})
    _install(layout, dict(LAYOUT_MAKERS, make_tileview=make_tileview))
    _install_modules()
    return m


#: the fork's modules a kernel file imports names from, and what each holds here
FORK_MODULES = {
    "tilelang.language.mesh_tensor": ("MeshTensor", "MeshShardingPolicy",
                                      "MeshReplicationType", "get_local_extent",
                                      "get_rank_extent"),
    "tilelang.layout.sunmmio_layouts": tuple(LAYOUT_MAKERS) + ("make_tileview",),
}


def _install_modules() -> None:
    """The fork's modules where TileLang has none of that name, so a kernel file's
    ``from tilelang.language.mesh_tensor import MeshShardingPolicy`` parses unchanged."""
    import importlib.util
    import sys
    import types

    names = dict(_ours(), **LAYOUT_MAKERS, make_tileview=make_tileview)
    for mod_name, held in FORK_MODULES.items():
        if mod_name in sys.modules:
            continue
        try:
            if importlib.util.find_spec(mod_name) is not None:
                continue  # TileLang's own module of that name wins
        except ModuleNotFoundError:
            pass
        mod = types.ModuleType(mod_name, f"SUNMMIO's {mod_name}, as meshtensor emulates it")
        for n in held:
            setattr(mod, n, names[n])
        sys.modules[mod_name] = mod
        parent, _, leaf = mod_name.rpartition(".")
        setattr(sys.modules[parent], leaf, mod)


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
