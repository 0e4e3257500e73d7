"""How a ``T.MeshTensor`` lies on SUNMMIO's ``(rows, cols)`` mesh: the upstream's
placements (``T.placement.*``, ``MeshShardingPolicy`` in both its forms) as one
:class:`Placement` value, and its :class:`meshtensor.Sharding` for a global shape.

A placement names, for each mesh axis, the tensor dim split over it (or none: copies
along that axis). ``full_shard(d, d)`` splits dim ``d`` over the rows, then each row's
part over the columns; ``mesh_as_line(d)`` splits it over all cores in linear-id order
(the legacy ``cross_mesh_dim``). Uneven sizes split as the upstream splits them now:
**balanced** (``D`` over ``n`` parts: the first ``D % n`` parts get one element more),
each core's buffer a slot of ``ceil(D / n)``. Under ``tm.enable(..., compat="2025")``
they split as the older fork did: **ceil blocks** (part ``p`` is ``[p c, (p+1) c)``
clipped, ``c = ceil(D / n)``), and ``full_shard(d, d)`` as ``mesh_as_line(d)``.

>>> from meshtensor import Mesh
>>> p = mesh_as_line(0)
>>> m = Mesh({"row": 2, "col": 2})
>>> p.sharding(m, (5,)).dim_bounds((5,), 0).tolist()        # balanced
[0, 2, 3, 4, 5]
>>> p.sharding(m, (5,), split="ceil").dim_bounds((5,), 0).tolist()
[0, 2, 4, 5, 5]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...mesh import Mesh, _is_int
from ...sharding import Sharding
from ..ir.mesh_param import SPLITS, balanced_bounds, split_sharding

__all__ = ["Placement", "Shard", "Replicate", "S", "R", "MeshReplicationType",
           "MeshShardingPolicy", "PlacementSpec", "replicated", "full_replicated",
           "row_shard", "col_shard", "full_shard", "mesh_as_line", "as_placement",
           "balanced_bounds", "SPLITS", "namespace"]

AXES = ("row", "col")


@dataclass(frozen=True)
class Shard:
    """Split tensor dim ``dim`` over one mesh axis (``T.placement.S(dim)``)."""

    dim: int

    def __post_init__(self) -> None:
        if not _is_int(self.dim) or self.dim < 0:
            raise ValueError(f"Shard.dim must be a non-negative int, got {self.dim!r}")

    def __repr__(self) -> str:
        return f"S({self.dim})"


@dataclass(frozen=True)
class Replicate:
    """Copies along one mesh axis (``T.placement.R()``)."""

    def __repr__(self) -> str:
        return "R()"


def S(dim: int) -> Shard:  # noqa: N802 (the upstream's name)
    """``Shard(dim)``."""
    return Shard(dim)


def R() -> Replicate:  # noqa: N802 (the upstream's name)
    """``Replicate()``."""
    return Replicate()


@dataclass(frozen=True)
class Placement:
    """The one form of every placement: ``row``/``col`` the tensor dim split over that
    mesh axis (``None``: copies along it); ``line``: ``row == col`` split over all cores
    in linear-id order instead of rows then columns.

    >>> full_shard(0, 1)
    Placement(row=0, col=1)
    >>> mesh_as_line(2)
    Placement(row=2, col=2, line=True)
    """

    row: int | None = None
    col: int | None = None
    line: bool = False

    def __post_init__(self) -> None:
        for name, v in (("row", self.row), ("col", self.col)):
            if v is not None and (not _is_int(v) or v < 0):
                raise ValueError(f"placement: the {name} dim must be a non-negative int or "
                                 f"None, got {v!r}")
        if self.line and (self.row is None or self.row != self.col):
            raise ValueError("placement: mesh_as_line splits one dim over both mesh axes")

    def __repr__(self) -> str:
        extra = ", line=True" if self.line else ""
        return f"Placement(row={self.row}, col={self.col}{extra})"

    def check(self, rank: int) -> None:
        """``ValueError`` when a split dim is not a dim of a rank-``rank`` tensor."""
        for name, dim in (("row", self.row), ("col", self.col)):
            if dim is not None and dim >= rank:
                raise ValueError(f"Invalid {name} shard dimension: {dim}, tensor rank is "
                                 f"{rank}")

    def split_axes(self, rank: int) -> list[list[str]]:
        """Mesh axis names per tensor dim (rows before columns on a shared dim)."""
        split: list[list[str]] = [[] for _ in range(rank)]
        if self.row is not None:
            split[self.row].append(AXES[0])
        if self.col is not None:
            split[self.col].append(AXES[1])
        return split

    def local_shape(self, mesh: Mesh, shape: Sequence[Any]) -> tuple[Any, ...]:
        """Each core's slot (the shape its buffer has): every split dim ceil-divided by
        the number of its parts (the same under both split rules); a symbolic size
        gives a TIR expression."""
        out = list(shape)
        for d, axes in enumerate(self.split_axes(len(shape))):
            k = int(np.prod([mesh.shape[AXES.index(a)] for a in axes], dtype=np.int64))
            n = int(shape[d]) if _is_int(shape[d]) else shape[d]
            out[d] = _ceildiv(n, k) if axes else n
        return tuple(out)

    def sharding(self, mesh: Mesh, shape: Sequence[int], split: str = "balanced"
                 ) -> Sharding:
        """The :class:`Sharding` of a tensor of ``shape`` on ``mesh`` (axes ``row``,
        ``col``) under split rule ``split`` (:data:`SPLITS`)."""
        self.check(len(shape))
        return split_sharding(mesh, shape, self.split_axes(len(shape)), self.line, split)

    def local_extent(self, mesh: Mesh, shape: Sequence[Any], core: Any,
                     split: str = "balanced") -> tuple[Any, ...]:
        """The valid extent of each dim on linear core ``core`` (an int, or a TIR
        expression: the extents are then expressions), the upstream's
        ``get_local_extent``."""
        nrows, ncols = mesh.shape
        row, col = core // ncols, core % ncols
        out = list(shape)

        def count(n: Any, k: Any, parts: int) -> Any:
            if split == "ceil":
                c = _ceildiv(n, parts)
                return _min(c, _max(n - k * c, 0))
            if _is_int(n) and _is_int(k):
                return int(n) // parts + (1 if int(k) < int(n) % parts else 0)
            return _ceildiv(n - k, parts)  # = n // parts + (k < n % parts) for 0 <= k

        rank = len(shape)
        self.check(rank)
        if self.line or (split == "ceil" and self.row is not None and self.row == self.col):
            out[self.row] = count(shape[self.row], core, nrows * ncols)
            return tuple(out)
        if self.row is not None:
            out[self.row] = count(out[self.row], row, nrows)
        if self.col is not None:
            out[self.col] = count(out[self.col], col, ncols)
        return tuple(out)

    def text(self) -> str:
        """The upstream's spelling."""
        if self.row is None and self.col is None:
            return "T.placement.replicated()"
        if self.line:
            return f"T.placement.mesh_as_line({self.row})"
        if self.col is None:
            return f"T.placement.row_shard({self.row})"
        if self.row is None:
            return f"T.placement.col_shard({self.col})"
        return f"T.placement.full_shard({self.row}, {self.col})"


def _ceildiv(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return -(-int(a) // int(b))
    from tvm import tirx
    return tirx.floordiv(a + (b - 1), b)


def _min(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return min(int(a), int(b))
    from tvm import tirx
    return tirx.min(a, b)


def _max(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return max(int(a), int(b))
    from tvm import tirx
    return tirx.max(a, b)


def replicated() -> Placement:
    """Copies on every core."""
    return Placement()


def full_replicated() -> Placement:
    """Alias of :func:`replicated`."""
    return Placement()


def row_shard(dim: int) -> Placement:
    """``dim`` split over the rows, copies along each row."""
    return Placement(row=dim)


def col_shard(dim: int) -> Placement:
    """``dim`` split over the columns, copies down each column."""
    return Placement(col=dim)


def full_shard(row_dim: int, col_dim: int) -> Placement:
    """``row_dim`` over the rows and ``col_dim`` over the columns (one dim: rows, then
    each row's part over the columns)."""
    return Placement(row=row_dim, col=col_dim)


def mesh_as_line(dim: int) -> Placement:
    """``dim`` split over all cores in linear-id order."""
    return Placement(row=dim, col=dim, line=True)


#: the upstream's ``PlacementSpec``: here every spec is a :class:`Placement`
PlacementSpec = Placement


class MeshReplicationType(enum.Enum):
    """The legacy ``replicate`` argument: ``NONE``, ``ROW`` (copies along each row;
    only ``y`` may split), ``COLUMN`` (copies down each column; only ``x``), ``ALL``."""

    NONE = 0
    ROW = 1
    COLUMN = 2
    ALL = 3


class MeshShardingPolicy:
    """The upstream's ``MeshShardingPolicy`` in both its forms: the legacy keywords
    (``x=d``: dim ``d`` over the columns; ``y=d``: over the rows; ``cross_mesh_dim=d``:
    over all cores in linear-id order; ``replicate`` a :class:`MeshReplicationType` or
    its int) or one ``[row_placement, col_placement]`` sequence of ``S(d)``/``R()``.
    :attr:`placement` is its :class:`Placement` (the upstream's translation).

    >>> MeshShardingPolicy(y=0, x=1).placement
    Placement(row=0, col=1)
    >>> MeshShardingPolicy([S(1), R()]).placement
    Placement(row=1, col=None)
    >>> MeshShardingPolicy(cross_mesh_dim=0, x=1)
    Traceback (most recent call last):
    ...
    ValueError: cross_mesh_dim is mutually exclusive with x/y splits
    """

    __slots__ = ("x", "y", "replicate", "cross_mesh_dim", "placements")

    def __init__(self, placements: Any = None, y: int | None = None,
                 replicate: Any = MeshReplicationType.NONE, cross_mesh_dim: int | None = None,
                 *, x: int | None = None):
        replicate = _replicate(replicate)
        if isinstance(placements, (list, tuple)):
            if x is not None or y is not None or cross_mesh_dim is not None or \
                    replicate is not MeshReplicationType.NONE:
                raise ValueError("placements cannot be combined with legacy sharding "
                                 "arguments")
            if len(placements) != 2:
                raise ValueError(f"placements must contain exactly two mesh axes, got "
                                 f"{len(placements)}")
            for axis, v in zip(AXES, placements):
                if not isinstance(v, (Shard, Replicate)):
                    raise TypeError(f"{axis} placement must be Shard or Replicate, got "
                                    f"{type(v).__name__}")
            object.__setattr__(self, "placements", tuple(placements))
            x = None
        else:
            if placements is not None:
                if x is not None:
                    raise TypeError("x was specified both positionally and by keyword")
                x = placements
            object.__setattr__(self, "placements", None)
        for name, v in (("x", x), ("y", y), ("cross_mesh_dim", cross_mesh_dim)):
            if v is not None and not _is_int(v):
                raise TypeError(f"MeshShardingPolicy: {name} must be an int dim or None, "
                                f"got {v!r}")
        if cross_mesh_dim is not None and (x is not None or y is not None):
            raise ValueError("cross_mesh_dim is mutually exclusive with x/y splits")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "replicate", replicate)
        object.__setattr__(self, "cross_mesh_dim", cross_mesh_dim)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MeshShardingPolicy is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MeshShardingPolicy) and self.placement == other.placement

    def __hash__(self) -> int:
        return hash(self.placement)

    def __repr__(self) -> str:
        if self.placements is not None:
            return f"MeshShardingPolicy([{self.placements[0]!r}, {self.placements[1]!r}])"
        parts = [f"{k}={getattr(self, k)}" for k in ("x", "y", "cross_mesh_dim")
                 if getattr(self, k) is not None]
        if self.replicate is not MeshReplicationType.NONE:
            parts.append(f"replicate=MeshReplicationType.{self.replicate.name}")
        return f"MeshShardingPolicy({', '.join(parts)})"

    def check(self, rank: int) -> None:
        """The upstream's legacy checks, for a rank-``rank`` tensor."""
        if self.placements is not None or self.replicate is MeshReplicationType.ALL:
            return
        if self.cross_mesh_dim is not None:
            if not 0 <= self.cross_mesh_dim < rank:
                raise ValueError(f"Invalid cross_mesh_dim: {self.cross_mesh_dim}, tensor "
                                 f"rank is {rank}")
            return
        if self.replicate is MeshReplicationType.ROW and self.x is not None:
            raise ValueError("Cannot shard on x-axis when replicating on rows")
        if self.replicate is MeshReplicationType.COLUMN and self.y is not None:
            raise ValueError("Cannot shard on y-axis when replicating on columns")
        for name, v in (("y", self.y), ("x", self.x)):
            if v is not None and not 0 <= v < rank:
                raise ValueError(f"Invalid {name}-split dimension: {v}, tensor rank is {rank}")

    @property
    def placement(self) -> Placement:
        """The policy as a :class:`Placement` (the upstream's ``to_placement_spec``)."""
        if self.placements is not None:
            row, col = (p.dim if isinstance(p, Shard) else None for p in self.placements)
            return Placement(row=row, col=col)
        rep = self.replicate
        if rep is MeshReplicationType.ALL:
            return Placement()
        if self.cross_mesh_dim is not None:
            return mesh_as_line(self.cross_mesh_dim)
        if rep is MeshReplicationType.ROW:
            return Placement(row=self.y)
        if rep is MeshReplicationType.COLUMN:
            return Placement(col=self.x)
        return Placement(row=self.y, col=self.x)

    def to_sharding(self, mesh: Mesh, rank: int, shape: Sequence[int] | None = None,
                    split: str = "ceil") -> Sharding:
        """The :class:`Sharding` on ``mesh`` (the older fork's ceil rule unless
        ``split="balanced"``, which needs the global ``shape``).

        >>> m = Mesh({"row": 2, "col": 4})
        >>> MeshShardingPolicy(x=1, replicate=MeshReplicationType.COLUMN).to_sharding(m, 2).spec()
        [[], ['col']]
        """
        self.check(rank)
        return self.placement.sharding(mesh, shape if shape is not None else (1,) * rank,
                                       split)

    @classmethod
    def from_sharding(cls, sharding: Sharding) -> "MeshShardingPolicy":
        """The legacy policy of a :class:`Sharding` on a 2-D mesh (axis 0 = rows, axis 1 =
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


def _replicate(value: Any) -> MeshReplicationType:
    if isinstance(value, MeshReplicationType):
        return value
    if _is_int(value) and not isinstance(value, bool):
        try:
            return MeshReplicationType(int(value))
        except ValueError:
            raise ValueError(f"MeshShardingPolicy: replicate {value!r} is not a "
                             f"MeshReplicationType value (0 NONE, 1 ROW, 2 COLUMN, 3 ALL)"
                             ) from None
    raise TypeError(f"MeshShardingPolicy: replicate must be a MeshReplicationType or int, "
                    f"got {type(value).__name__}")


def as_placement(value: Any) -> tuple[Placement, str]:
    """A kernel's placement argument (a :class:`MeshShardingPolicy`, a ``T.placement``
    value, a ``[row, col]`` sequence of ``S``/``R``) as ``(Placement, its text)``."""
    if isinstance(value, MeshShardingPolicy):
        return value.placement, repr(value)
    if isinstance(value, Placement):
        return value, value.text()
    if isinstance(value, (list, tuple)):
        policy = MeshShardingPolicy(list(value))
        return policy.placement, repr(policy)
    raise TypeError(f"T.MeshTensor: placement must be a T.placement value, a [row, col] "
                    f"sequence of T.placement.S(dim)/R() or a T.MeshShardingPolicy, got "
                    f"{type(value).__name__}")


class _Namespace:
    """``T.placement``: the upstream's placement constructors."""

    S = staticmethod(S)
    R = staticmethod(R)
    Shard = Shard
    Replicate = Replicate
    PlacementSpec = Placement
    MeshShardingPolicy = MeshShardingPolicy
    MeshReplicationType = MeshReplicationType
    replicated = staticmethod(replicated)
    full_replicated = staticmethod(full_replicated)
    row_shard = staticmethod(row_shard)
    col_shard = staticmethod(col_shard)
    full_shard = staticmethod(full_shard)
    mesh_as_line = staticmethod(mesh_as_line)


#: what ``T.placement`` is after ``tm.enable``
namespace = _Namespace()
