"""How a tensor is laid out over a mesh: split, replicated, partial, halos, offsets.

Every shard-region computation of the package lives here (``Sharding.regions``,
``Sharding.windows``, ``local_region``, ``local_shape``, ``tile_shape``, on the ceil-div
rule of :func:`~meshtensor.shapes.chunk_bounds`, re-exported here): collectives, the
planner, the visualizer and the TileLang front end ask a ``Sharding`` and never
re-derive shapes or offsets. Other systems' forms of a layout (JAX, DTensor, MLIR, the
seed dict) are read and written by :mod:`meshtensor.forms`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from . import forms
from .mesh import AxisLike, DeviceLike, Mesh, _is_int
from .reduction import REDUCTION_KINDS  # the kinds of partial shardings
from .shapes import _shape_tuple, chunk_bounds, nested_chunk_bounds  # noqa: F401 (re-exported)


def _normalize_split_axes(mesh: Mesh, split_axes: Any) -> tuple[tuple[int, ...], ...]:
    if isinstance(split_axes, (str, bytes)) or not isinstance(split_axes, Sequence):
        raise TypeError(f"Sharding: split_axes must be a list with one entry per tensor "
                        f"dim, got {split_axes!r}")
    out: list[tuple[int, ...]] = []
    seen: dict[int, int] = {}
    for d, entry in enumerate(split_axes):
        # An entry is a list of mesh axes; like JAX's PartitionSpec, a bare axis or
        # None is accepted for one axis or none.
        if entry is None:
            entry = ()
        elif isinstance(entry, (str, int, np.integer)):
            entry = (entry,)
        axes = []
        for a in entry:
            ai = mesh.axis_index(a, what=f"Sharding: split_axes[{d}]")
            if ai in seen and seen[ai] == d:
                raise ValueError(f"Sharding: mesh axis {mesh.axis_names[ai]!r} ({ai}) is "
                                 f"listed twice in split_axes[{d}]; a mesh axis may split "
                                 f"a dim once")
            if ai in seen:
                raise ValueError(f"Sharding: mesh axis {mesh.axis_names[ai]!r} ({ai}) is "
                                 f"used twice, by dims {seen[ai]} and {d}; a mesh axis "
                                 f"may split one dim once")
            seen[ai] = d
            axes.append(ai)
        out.append(tuple(axes))
    while out and not out[-1]:
        out.pop()
    return tuple(out)


@dataclass(frozen=True, slots=True, init=False)
class Sharding:
    """The layout of a tensor over a mesh, as in MLIR's ``shard.sharding``.

    Args:
        mesh: the :class:`Mesh`.
        split_axes: ``split_axes[d]`` lists the mesh axes (indices or names) that split
            tensor dim ``d``, outer to inner; ``[]`` or ``None`` leaves it unsplit and
            dims past the end are unsplit. A mesh axis that splits nothing replicates.
        partial: ``{mesh_axis: kind}``, kind in ``sum, max, min, prod``: the devices
            along those axes hold values whose reduction is the tensor.
        halo_sizes: flattened ``(lo, hi)`` per split dim (MLIR format).
        sharded_dims_offsets: flattened ``k + 1`` offsets per split dim (MLIR format).

    Equal layouts compare and hash equal: axes are stored as indices, trailing unsplit
    dims are dropped and all-zero halos are dropped.

    Example:
        >>> m = Mesh({"x": 2, "y": 3})
        >>> s = Sharding(m, [["x"], ["y"]])
        >>> s.local_region((6, 6), (1, 2))
        (slice(3, 6, None), slice(4, 6, None))
        >>> s == Sharding(m, [[0], [1], []])
        True
    """

    mesh: Mesh
    split_axes: tuple[tuple[int, ...], ...]
    partial_axes: tuple[int, ...]
    partial_kind: str | None
    halo_sizes: tuple[int, ...]
    sharded_dims_offsets: tuple[int, ...]
    # Shardings key plan caches: hash once (a fresh process recomputes it, see __reduce__)
    _hash: int = field(init=False, repr=False, compare=False)
    _counts: tuple[int, ...] = field(init=False, repr=False, compare=False)  # per split_axes dim
    # no partial axes, halos or explicit offsets: the layouts the planner's fast path takes
    _split_only: bool = field(init=False, repr=False, compare=False)

    def __init__(self, mesh: Mesh, split_axes: Sequence[Any] = (), *,
                 partial: Mapping[AxisLike, str] | None = None,
                 halo_sizes: Sequence[int] | None = None,
                 sharded_dims_offsets: Sequence[int] | None = None) -> None:
        if not isinstance(mesh, Mesh):
            raise TypeError(f"Sharding: mesh must be a Mesh, got {type(mesh).__name__}")
        split = _normalize_split_axes(mesh, split_axes)
        used = {a: d for d, axes in enumerate(split) for a in axes}

        p_axes: list[int] = []
        kind: str | None = None
        if partial:
            if not isinstance(partial, Mapping):
                raise TypeError(f"Sharding: partial must be a mapping mesh axis -> kind, "
                                f"got {partial!r}")
            for a, k in partial.items():
                ai = mesh.axis_index(a, what="Sharding: partial")
                if k not in REDUCTION_KINDS:
                    raise ValueError(f"Sharding: partial kind {k!r} on mesh axis {a!r} is "
                                     f"not one of {list(REDUCTION_KINDS)}")
                if kind is not None and k != kind:
                    raise ValueError(f"Sharding: all partial axes share one kind, got "
                                     f"{kind!r} and {k!r}")
                kind = k
                if ai in used:
                    raise ValueError(f"Sharding: mesh axis {mesh.axis_names[ai]!r} ({ai}) "
                                     f"is both split (dim {used[ai]}) and partial")
                if ai in p_axes:
                    raise ValueError(f"Sharding: mesh axis {mesh.axis_names[ai]!r} is "
                                     f"partial twice")
                p_axes.append(ai)

        n_split = sum(1 for axes in split if axes)
        halos = tuple(int(h) for h in (halo_sizes or ()))
        offsets = tuple(int(o) for o in (sharded_dims_offsets or ()))
        if halos and offsets:
            raise ValueError("Sharding: halo_sizes and sharded_dims_offsets are "
                             "mutually exclusive")
        if halos:
            if len(halos) != 2 * n_split:
                raise ValueError(f"Sharding: halo_sizes needs 2 values per split dim "
                                 f"({n_split} split dims -> {2 * n_split}), got "
                                 f"{len(halos)}")
            for i, h in enumerate(halos):
                if h < 0:
                    raise ValueError(f"Sharding: halo_sizes[{i}] must be >= 0, got {h}")
            if not any(halos):
                halos = ()
        if offsets:
            pos = 0
            for d, axes in enumerate(split):
                if not axes:
                    continue
                k = int(np.prod([mesh.shape[a] for a in axes]))
                block = offsets[pos:pos + k + 1]
                if len(block) < k + 1:
                    break
                if block[0] != 0:
                    raise ValueError(f"Sharding: sharded_dims_offsets for dim {d} must "
                                     f"start at 0, got {block[0]}")
                for i in range(k):
                    if block[i + 1] < block[i]:
                        raise ValueError(f"Sharding: sharded_dims_offsets for dim {d} "
                                         f"decrease at shard {i}: {block[i]} > "
                                         f"{block[i + 1]}")
                pos += k + 1
            expected = sum(int(np.prod([mesh.shape[a] for a in axes])) + 1
                           for axes in split if axes)
            if len(offsets) != expected:
                raise ValueError(f"Sharding: sharded_dims_offsets needs k+1 values per "
                                 f"split dim ({expected} in all), got {len(offsets)}")

        self._assign(mesh, split, tuple(sorted(p_axes)), kind, halos, offsets)

    def _assign(self, mesh: Mesh, split: tuple[tuple[int, ...], ...],
                partial_axes: tuple[int, ...], kind: str | None, halos: tuple[int, ...],
                offsets: tuple[int, ...]) -> None:
        """Set the (frozen) fields from normalised values, and what derives from them:
        the stored hash, the shard counts and whether only split axes are set (one place
        for both constructors)."""
        set_ = object.__setattr__
        set_(self, "mesh", mesh)
        set_(self, "split_axes", split)
        set_(self, "partial_axes", partial_axes)
        set_(self, "partial_kind", kind)
        set_(self, "halo_sizes", halos)
        set_(self, "sharded_dims_offsets", offsets)
        set_(self, "_hash", hash((mesh, split, partial_axes, kind, halos, offsets)))
        sizes = mesh.shape
        set_(self, "_counts", tuple(math.prod([sizes[a] for a in axes]) for axes in split))
        set_(self, "_split_only", not (partial_axes or halos or offsets))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not Sharding:
            return NotImplemented
        return (self._hash == other._hash and self.split_axes == other.split_axes
                and self.partial_axes == other.partial_axes
                and self.partial_kind == other.partial_kind
                and self.halo_sizes == other.halo_sizes
                and self.sharded_dims_offsets == other.sharded_dims_offsets
                and self.mesh == other.mesh)

    def __reduce__(self):
        # rebuild through the constructor: string hashes differ between processes
        return _rebuild, (self.mesh, self.split_axes, self.partial or None,
                          self.halo_sizes or None, self.sharded_dims_offsets or None)

    # -- constructors ----------------------------------------------------------
    @classmethod
    def replicated(cls, mesh: Mesh) -> "Sharding":
        """Every device holds the whole tensor.

        >>> Sharding.replicated(Mesh([2])).is_replicated
        True
        """
        return cls(mesh, [])

    @classmethod
    def _of_split(cls, mesh: Mesh, split: Sequence[Sequence[int]]) -> "Sharding":
        """``Sharding(mesh, split)`` for integer axes already known to be valid (the
        planner's intermediate layouts), without the checks: equal to the checked
        constructor's result, in a fraction of its time."""
        split_axes = tuple(map(tuple, split))
        while split_axes and not split_axes[-1]:
            split_axes = split_axes[:-1]
        self = object.__new__(cls)
        self._assign(mesh, split_axes, (), None, (), ())
        return self

    @classmethod
    def from_seed(cls, mesh: Mesh, mapping: Mapping[str, int | None] | Sequence[int | None],
                  *, ndim: int | None = None) -> "Sharding":
        """From the seed format ``{"x": d0, "y": d1}``: mesh axis -> tensor dim it splits.

        ``None`` or a missing axis means replicated along that axis; two axes naming the
        same dim split it by both, in mesh-axis order. A sequence with one entry per
        mesh axis (the seed's tuple form ``(x_dim, y_dim)``) is accepted too.

        ``ndim`` (the tensor's rank) checks every dim against it. Without it, a dim
        index above ``mesh.ndim`` is refused: a seed dict names at most one dim per mesh
        axis, and ``{"x": 5}`` on a 2-D mesh is far likelier a typo than a rank-6 tensor
        (docs/decisions.md); pass ``ndim=`` to confirm such a rank.

        >>> m = Mesh({"x": 4, "y": 4})
        >>> Sharding.from_seed(m, {"x": 0, "y": 0}).spec()
        [['x', 'y']]
        >>> Sharding.from_seed(m, {"x": None, "y": 1}).spec()
        [[], ['y']]
        """
        if isinstance(mapping, Mapping):
            for name in mapping:
                mesh.axis_index(name, what="Sharding.from_seed")
            dims = [mapping.get(name) for name in mesh.axis_names]
        elif isinstance(mapping, Sequence) and not isinstance(mapping, (str, bytes)):
            if len(mapping) != mesh.ndim:
                raise ValueError(f"Sharding.from_seed: tuple form needs one entry per mesh "
                                 f"axis ({mesh.ndim}), got {len(mapping)}: {tuple(mapping)}")
            dims = list(mapping)
        else:
            raise TypeError(f"Sharding.from_seed: expected a dict mesh axis -> tensor dim, "
                            f"got {mapping!r}")
        if ndim is not None and (not _is_int(ndim) or ndim < 0):
            raise ValueError(f"Sharding.from_seed: ndim must be an int >= 0, got {ndim!r}")
        split: list[list[int]] = []
        for a, d in enumerate(dims):
            if d is None:
                continue
            if not _is_int(d) or d < 0:
                raise ValueError(f"Sharding.from_seed: mesh axis {mesh.axis_names[a]!r} "
                                 f"maps to {d!r}; expected a tensor dim >= 0 or None")
            if ndim is not None and d >= ndim:
                raise ValueError(f"Sharding.from_seed: mesh axis {mesh.axis_names[a]!r} maps "
                                 f"to tensor dim {d}, out of range [0, {ndim}) for ndim={ndim}")
            if ndim is None and d > mesh.ndim:
                raise ValueError(f"Sharding.from_seed: mesh axis {mesh.axis_names[a]!r} maps "
                                 f"to tensor dim {d}, which would make the tensor rank "
                                 f"{d + 1} on a {mesh.ndim}-axis mesh; pass ndim= (the "
                                 f"tensor's rank) to confirm, or fix the dim")
            while len(split) <= d:
                split.append([])
            split[d].append(a)
        return cls(mesh, split)

    # -- other systems' forms (meshtensor.forms; meshtensor.interop re-exports) -------
    @classmethod
    def from_partition_spec(cls, mesh: Mesh, spec: Any, ndim: int | None = None) -> "Sharding":
        """From a JAX ``PartitionSpec`` or a tuple (``None``, a name, or a tuple of names
        per dim); see :func:`meshtensor.forms.partition_spec_split`.

        >>> Sharding.from_partition_spec(Mesh({"x": 2, "y": 2}), ("y", "x")).spec()
        [['y'], ['x']]
        """
        return cls(mesh, forms.partition_spec_split(mesh, spec, ndim))

    def to_partition_spec(self) -> Any:
        """The JAX form: a ``PartitionSpec`` when jax imports, else a plain tuple.

        >>> tuple(Sharding(Mesh({"x": 2, "y": 2}), [["x", "y"]]).to_partition_spec())
        (('x', 'y'),)
        """
        return forms.to_partition_spec(self)

    @classmethod
    def from_placements(cls, mesh: Mesh, placements: Sequence[Any], ndim: int,
                        global_shape: Sequence[int] | None = None) -> "Sharding":
        """From PyTorch DTensor placements, one per mesh axis (exact nested layout given
        ``global_shape``); see :func:`meshtensor.forms.placements_fields`.

        >>> Sharding.from_placements(Mesh([2, 2]), ["S(0)", "R"], 2).spec()
        [['x']]
        """
        split, kw = forms.placements_fields(mesh, placements, ndim, global_shape)
        return cls(mesh, split, **kw)

    def to_placements(self, global_shape: Sequence[int] | None = None) -> list[Any]:
        """PyTorch DTensor placements (torch objects), one per mesh axis; see
        :func:`meshtensor.forms.to_placements`.

        >>> [str(p) for p in Sharding(Mesh([2, 2]), [[1]]).to_placements()]
        ['R', 'S(0)']
        """
        return forms.to_placements(self, global_shape)

    @classmethod
    def from_mlir(cls, text: str, mesh: Mesh) -> "Sharding":
        """From MLIR's ``shard.sharding @grid split_axes = [[0], [1]] ...`` (seed 003).

        >>> Sharding.from_mlir("shard.sharding @g split_axes = [[1]]", Mesh([2, 2])).spec()
        [['y']]
        """
        split, kw = forms.mlir_fields(text, mesh)
        try:
            return cls(mesh, split, **kw)
        except ValueError as e:
            raise ValueError(f"Sharding.from_mlir: {e}") from None

    def to_mlir(self, mesh_name: str = "mesh") -> str:
        """MLIR's ``shard.sharding`` op for this layout.

        >>> Sharding(Mesh([2, 2]), [[], [0, 1]]).to_mlir("grid0")
        'shard.sharding @grid0 split_axes = [[], [0, 1]]'
        """
        return forms.to_mlir(self, mesh_name)

    def to_seed(self) -> dict[str, int | None]:
        """The seed dict ``{"x": d, "y": None}`` (inverse of :meth:`from_seed`).

        >>> Sharding(Mesh({"x": 2, "y": 2}), [[], ["y"]]).to_seed()
        {'x': None, 'y': 1}
        """
        return forms.to_seed(self)

    # -- plain facts -----------------------------------------------------------
    @property
    def partial(self) -> dict[str, str]:
        """``{axis name: kind}`` of the partial axes."""
        return {self.mesh.axis_names[a]: self.partial_kind for a in self.partial_axes}

    @property
    def is_partial(self) -> bool:
        return bool(self.partial_axes)

    @property
    def is_replicated(self) -> bool:
        """No split, no partial: every device holds the whole tensor."""
        return not self.split_axes and not self.partial_axes

    @property
    def split_dims(self) -> tuple[int, ...]:
        """Tensor dims split by at least one mesh axis, in order."""
        return tuple(d for d, axes in enumerate(self.split_axes) if axes)

    @property
    def replicated_axes(self) -> tuple[int, ...]:
        """Mesh axes that neither split nor are partial."""
        used = {a for axes in self.split_axes for a in axes} | set(self.partial_axes)
        return tuple(a for a in range(self.mesh.ndim) if a not in used)

    def axes_of(self, dim: int) -> tuple[int, ...]:
        """Mesh axes splitting tensor dim ``dim`` (``()`` if unsplit)."""
        return self.split_axes[dim] if dim < len(self.split_axes) else ()

    def dim_of(self, axis: AxisLike) -> int | None:
        """The tensor dim a mesh axis splits, or ``None``."""
        a = self.mesh.axis_index(axis, what="Sharding.dim_of")
        for d, axes in enumerate(self.split_axes):
            if a in axes:
                return d
        return None

    def shard_count(self, dim: int) -> int:
        """Number of shards of tensor dim ``dim``."""
        return self._counts[dim] if dim < len(self._counts) else 1

    def halo(self, dim: int) -> tuple[int, int]:
        """``(lo, hi)`` halo of tensor dim ``dim`` (``(0, 0)`` when it has none)."""
        if not self.halo_sizes or not self.axes_of(dim):
            return (0, 0)
        i = self.split_dims.index(dim)
        return self.halo_sizes[2 * i], self.halo_sizes[2 * i + 1]

    def offsets(self, dim: int) -> tuple[int, ...] | None:
        """Explicit ``k + 1`` offsets of a split dim, or ``None`` for the ceil-div rule."""
        if not self.sharded_dims_offsets or not self.axes_of(dim):
            return None
        pos = 0
        for d in self.split_dims:
            k = self.shard_count(d)
            if d == dim:
                return self.sharded_dims_offsets[pos:pos + k + 1]
            pos += k + 1
        return None  # pragma: no cover - dim is split, loop returns

    def spec(self) -> list[list[str]]:
        """``split_axes`` with axis names, e.g. ``[['x'], ['y']]``."""
        return [[self.mesh.axis_names[a] for a in axes] for axes in self.split_axes]

    # -- derived variants --------------------------------------------------------
    def replace(self, *, split_axes: Sequence[Any] | None = None,
                partial: Mapping[AxisLike, str] | None | bool = False,
                halo_sizes: Sequence[int] | None | bool = False,
                sharded_dims_offsets: Sequence[int] | None | bool = False) -> "Sharding":
        """A copy with some fields replaced (``False`` keeps a field as it is).

        >>> Sharding(Mesh([2]), [[0]], halo_sizes=[1, 1]).replace(halo_sizes=None).halo_sizes
        ()
        """
        return Sharding(
            self.mesh,
            self.split_axes if split_axes is None else split_axes,
            partial=self.partial if partial is False else partial,
            halo_sizes=self.halo_sizes if halo_sizes is False else halo_sizes,
            sharded_dims_offsets=(self.sharded_dims_offsets if sharded_dims_offsets is False
                                  else sharded_dims_offsets))

    # -- regions -------------------------------------------------------------------
    def check_shape(self, global_shape: Sequence[int], what: str = "Sharding") -> tuple[int, ...]:
        """Validate ``global_shape`` against this sharding and return it as a tuple."""
        shape = _shape_tuple(global_shape, what)
        if len(self.split_axes) > len(shape):
            raise ValueError(f"{what}: sharding {self} splits dim {len(self.split_axes) - 1} "
                             f"but the tensor has rank {len(shape)} (shape {shape})")
        for d in self.split_dims:
            off = self.offsets(d)
            if off is not None and off[-1] != shape[d]:
                raise ValueError(f"{what}: sharded_dims_offsets for dim {d} end at "
                                 f"{off[-1]}, but the dim has size {shape[d]}")
        return shape

    def dim_bounds(self, global_shape: Sequence[int], dim: int) -> np.ndarray:
        """The ``k + 1`` shard boundaries of tensor dim ``dim``.

        >>> Sharding(Mesh([4]), [[0]]).dim_bounds((10,), 0).tolist()
        [0, 3, 6, 9, 10]
        """
        shape = self.check_shape(global_shape)
        off = self.offsets(dim)
        if off is not None:
            return np.asarray(off, dtype=np.int64)
        return chunk_bounds(shape[dim], self.shard_count(dim))

    def shard_index(self, dim: int) -> np.ndarray:
        """For each device (linear order), its shard index along tensor dim ``dim``:
        the row-major linearisation of its coordinates on the dim's split axes."""
        return self.mesh.in_group_index(self.axes_of(dim))

    def regions(self, global_shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Core regions of all devices: ``(starts, stops)``, each ``(mesh.size, rank)``.

        Halos excluded. Read-only arrays, cached per ``(sharding, shape)``.
        """
        return _regions(self, self.check_shape(global_shape))

    def windows(self, global_shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Global positions covered by each device's local array, halos included:
        ``(starts, stops)``, each ``(mesh.size, rank)``; a halo may reach outside
        ``[0, n)`` (those cells hold zero)."""
        return _windows(self, self.check_shape(global_shape))

    def local_region(self, global_shape: Sequence[int], device: DeviceLike
                     ) -> tuple[slice, ...]:
        """The device's core region of the global tensor, one slice per dim.

        >>> Sharding(Mesh([3]), [[0]]).local_region((7, 2), 2)
        (slice(6, 7, None), slice(0, 2, None))
        """
        starts, stops = self.regions(global_shape)
        i = self.mesh.linear_index(device)
        return tuple(slice(int(a), int(b)) for a, b in zip(starts[i], stops[i]))

    def local_shape(self, global_shape: Sequence[int], device: DeviceLike) -> tuple[int, ...]:
        """Shape of the device's local array (core plus halos).

        >>> Sharding(Mesh([2]), [[0]], halo_sizes=[1, 2]).local_shape((8,), 0)
        (7,)
        """
        starts, stops = self.windows(global_shape)
        i = self.mesh.linear_index(device)
        return tuple(int(b - a) for a, b in zip(starts[i], stops[i]))

    def tile_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """Per-device tile shape: every split dim ceil-divided by its shard count
        (the seed's ``get_tile_shape``); with explicit offsets, the largest shard.
        Halos excluded.

        >>> Sharding(Mesh({"x": 4, "y": 4}), [["x"], ["y"]]).tile_shape((10, 16))
        (3, 4)
        """
        shape = self.check_shape(global_shape)
        out = list(shape)
        for d in self.split_dims:
            off = self.offsets(d)
            if off is None:
                out[d] = -(-shape[d] // self.shard_count(d))
            else:
                out[d] = int(np.max(np.diff(off))) if len(off) > 1 else 0
        return tuple(out)

    # -- text ------------------------------------------------------------------------
    def __str__(self) -> str:
        names = self.mesh.axis_names
        parts = ["S(" + ",".join(names[a] for a in axes) + ")" if axes else "R"
                 for axes in self.split_axes] or ["R"]
        s = "".join(parts)
        if self.partial_axes:
            s += f" P({self.partial_kind}:" + ",".join(names[a] for a in self.partial_axes) + ")"
        if self.halo_sizes:
            s += f" halo={list(self.halo_sizes)}"
        if self.sharded_dims_offsets:
            s += f" offsets={list(self.sharded_dims_offsets)}"
        return s

    def __repr__(self) -> str:
        extra = ""
        if self.partial_axes:
            extra += f", partial={self.partial!r}"
        if self.halo_sizes:
            extra += f", halo_sizes={list(self.halo_sizes)}"
        if self.sharded_dims_offsets:
            extra += f", sharded_dims_offsets={list(self.sharded_dims_offsets)}"
        return f"Sharding({self.mesh!r}, {self.spec()!r}{extra})"


def _rebuild(mesh, split_axes, partial, halo_sizes, offsets) -> Sharding:
    return Sharding(mesh, split_axes, partial=partial, halo_sizes=halo_sizes,
                    sharded_dims_offsets=offsets)


@lru_cache(maxsize=1024)
def _regions(s: Sharding, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    ndev = s.mesh.size
    starts = np.zeros((ndev, len(shape)), dtype=np.int64)
    stops = np.tile(np.asarray(shape, dtype=np.int64), (ndev, 1))
    for d in s.split_dims:
        b = s.dim_bounds(shape, d)
        idx = s.shard_index(d)
        starts[:, d] = b[idx]
        stops[:, d] = b[idx + 1]
    starts.flags.writeable = False
    stops.flags.writeable = False
    return starts, stops


@lru_cache(maxsize=1024)
def _windows(s: Sharding, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    starts, stops = _regions(s, shape)
    if not s.halo_sizes:
        return starts, stops
    starts, stops = starts.copy(), stops.copy()
    for d in s.split_dims:
        lo, hi = s.halo(d)
        starts[:, d] -= lo
        stops[:, d] += hi
    starts.flags.writeable = False
    stops.flags.writeable = False
    return starts, stops
