"""The NumPy simulator: one local array per device, and ``distribute``."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .mesh import DeviceLike, Mesh
from .reduction import identity, reduce_arrays
from .boxes import box_slices, copy_pieces
from .sharding import Sharding


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view: locals are shared between replicas, so nobody may write them."""
    v = a.view()
    v.flags.writeable = False
    return v


def window_slices(w_start: np.ndarray, w_stop: np.ndarray, shape: Sequence[int]
                  ) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """For a window ``[w_start, w_stop)`` on a tensor of ``shape``: the global slices of
    its in-tensor part and where that part sits inside the local array."""
    g, loc = [], []
    for a, b, n in zip(w_start.tolist(), w_stop.tolist(), shape):
        lo, hi = max(a, 0), min(b, n)
        hi = max(hi, lo)
        g.append(slice(lo, hi))
        loc.append(slice(lo - a, hi - a))
    return tuple(g), tuple(loc)


class MeshArray:
    """One array per device of a mesh, optionally with the sharding it follows.

    Build one with :func:`distribute` or :meth:`from_locals`. Local arrays are read-only
    (replicas share memory); collectives return new MeshArrays.

    Example:
        >>> m = Mesh({"x": 2, "y": 2})
        >>> a = distribute(np.arange(8).reshape(2, 4), Sharding(m, [[], ["y"]]))
        >>> a.local((1, 1)).tolist()
        [[2, 3], [6, 7]]
        >>> a.to_global().shape
        (2, 4)
    """

    __slots__ = ("_mesh", "_locals", "_sharding", "_global_shape")

    def __init__(self, mesh: Mesh, locals_: Sequence[np.ndarray], sharding: Sharding | None,
                 global_shape: tuple[int, ...] | None) -> None:
        # Internal: callers use distribute / from_locals, which validate.
        self._mesh = mesh
        self._locals = tuple(locals_)
        self._sharding = sharding
        self._global_shape = global_shape

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_locals(cls, mesh: Mesh, locals: Sequence[np.ndarray] | Mapping[DeviceLike, np.ndarray],
                    *, sharding: Sharding | None = None,
                    global_shape: Sequence[int] | None = None) -> "MeshArray":
        """Build from per-device arrays (not copied).

        Args:
            mesh: the mesh.
            locals: arrays in linear device order, or a mapping device (coordinates or
                linear index) -> array covering every device.
            sharding: the layout the arrays follow; their shapes are checked against it.
            global_shape: the global shape; inferred from the shards when omitted.

        >>> m = Mesh([2])
        >>> a = MeshArray.from_locals(m, [np.ones(2), np.zeros(1)], sharding=Sharding(m, [[0]]))
        >>> a.global_shape
        (3,)
        """
        if not isinstance(mesh, Mesh):
            raise TypeError(f"from_locals: mesh must be a Mesh, got {type(mesh).__name__}")
        if isinstance(locals, Mapping):
            arrays: list[np.ndarray | None] = [None] * mesh.size
            for dev, arr in locals.items():
                i = mesh.linear_index(dev)
                if arrays[i] is not None:
                    raise ValueError(f"from_locals: device {mesh.multi_index(i)} given twice")
                arrays[i] = arr
            missing = [mesh.multi_index(i) for i, a in enumerate(arrays) if a is None]
            if missing:
                raise ValueError(f"from_locals: no array for devices {missing[:8]}"
                                 f"{' ...' if len(missing) > 8 else ''}")
        else:
            arrays = list(locals)
            if len(arrays) != mesh.size:
                raise ValueError(f"from_locals: {len(arrays)} arrays for a mesh of "
                                 f"{mesh.size} devices ({mesh})")
        arrs = [_frozen(np.asarray(a)) for a in arrays]
        dtypes = {a.dtype for a in arrs}
        if len(dtypes) > 1:
            raise ValueError(f"from_locals: local arrays have different dtypes "
                             f"{sorted(map(str, dtypes))}")
        if sharding is None:
            if global_shape is not None:
                raise ValueError("from_locals: global_shape needs a sharding")
            return cls(mesh, arrs, None, None)
        if sharding.mesh != mesh:
            raise ValueError(f"from_locals: sharding is on mesh {sharding.mesh}, arrays on "
                             f"mesh {mesh}")
        ranks = {a.ndim for a in arrs}
        if len(ranks) > 1:
            raise ValueError(f"from_locals: local arrays have different ranks {sorted(ranks)}")
        if global_shape is None:
            shape = _infer_global_shape(sharding, arrs)
        else:
            shape = sharding.check_shape(global_shape, "from_locals")
        w0, w1 = sharding.windows(shape)
        want = w1 - w0
        for i, a in enumerate(arrs):
            if a.shape != tuple(want[i].tolist()):
                raise ValueError(f"from_locals: device {mesh.multi_index(i)} holds shape "
                                 f"{a.shape}, sharding {sharding} of global shape {shape} "
                                 f"expects {tuple(want[i].tolist())}")
        return cls(mesh, arrs, sharding, shape)

    def with_sharding(self, sharding: Sharding, global_shape: Sequence[int] | None = None
                      ) -> "MeshArray":
        """The same local arrays declared to follow ``sharding`` (shapes are checked)."""
        return MeshArray.from_locals(self._mesh, self._locals, sharding=sharding,
                                     global_shape=global_shape)

    # -- access ----------------------------------------------------------------------
    @property
    def mesh(self) -> Mesh:
        return self._mesh

    @property
    def sharding(self) -> Sharding | None:
        return self._sharding

    @property
    def global_shape(self) -> tuple[int, ...] | None:
        return self._global_shape

    @property
    def dtype(self) -> np.dtype:
        return self._locals[0].dtype

    @property
    def locals(self) -> tuple[np.ndarray, ...]:
        """The local arrays in linear device order (read-only)."""
        return self._locals

    def local(self, device: DeviceLike) -> np.ndarray:
        """The local array of a device (coordinates or linear index); read-only."""
        return self._locals[self._mesh.linear_index(device)]

    @property
    def nbytes(self) -> int:
        """Bytes held by all devices together (replicas counted once per device)."""
        return int(sum(a.nbytes for a in self._locals))

    def to_global(self) -> np.ndarray:
        """Assemble the global tensor: pending partial reductions are applied, halos
        dropped. Needs a sharding."""
        s = self._sharding
        if s is None:
            raise ValueError("to_global: this MeshArray has no sharding (a collective's "
                             "result); attach one with with_sharding(...)")
        shape = self._global_shape
        mesh = self._mesh
        starts, stops = s.regions(shape)
        wstarts, _ = s.windows(shape)
        coords = mesh.coords
        # One representative device per distinct shard: coordinate 0 on every mesh
        # axis that does not split (replicas hold the same data).
        nonsplit = list(s.replicated_axes) + list(s.partial_axes)
        reps = np.flatnonzero(np.all(coords[:, nonsplit] == 0, axis=1)) if nonsplit \
            else np.arange(mesh.size)
        groups = mesh.group_array(s.partial_axes) if s.partial_axes else None
        if groups is not None:
            group_of = np.empty(mesh.size, dtype=np.int64)
            group_of[groups.reshape(-1)] = np.repeat(np.arange(len(groups)), groups.shape[1])
        out = np.empty(shape, dtype=self.dtype)
        pieces = []
        for i in reps.tolist():
            if groups is not None:
                data = reduce_arrays([self._locals[j] for j in groups[group_of[i]].tolist()],
                                     s.partial_kind)
            else:
                data = self._locals[i]
            lo, hi = starts[i], stops[i]
            pieces.append((box_slices(lo, hi), data[box_slices(lo, hi, wstarts[i])]))
        copy_pieces(out, pieces)  # in bands: one pass over out, nearly in address order
        return out

    def __repr__(self) -> str:
        if self._sharding is None:
            return f"MeshArray(mesh={self._mesh}, dtype={self.dtype}, no sharding)"
        return (f"MeshArray(mesh={self._mesh}, sharding={self._sharding}, "
                f"global_shape={self._global_shape}, dtype={self.dtype})")


def _infer_global_shape(s: Sharding, arrs: Sequence[np.ndarray]) -> tuple[int, ...]:
    rank = arrs[0].ndim
    if len(s.split_axes) > rank:
        raise ValueError(f"from_locals: sharding {s} splits dim {len(s.split_axes) - 1} but "
                         f"the local arrays have rank {rank}")
    shape = list(arrs[0].shape)
    for d in s.split_dims:
        off = s.offsets(d)
        if off is not None:
            shape[d] = off[-1]
            continue
        lo, hi = s.halo(d)
        idx = s.shard_index(d)
        first = np.unique(idx, return_index=True)[1]  # one device per shard index
        for i in first.tolist():
            if arrs[i].shape[d] < lo + hi:
                raise ValueError(f"from_locals: device {s.mesh.multi_index(i)} holds "
                                 f"{arrs[i].shape[d]} cells along dim {d}, fewer than its "
                                 f"halos {lo} + {hi}")
        shape[d] = int(sum(arrs[i].shape[d] - lo - hi for i in first.tolist()))
    return tuple(shape)


def distribute(x: np.ndarray, sharding: Sharding) -> MeshArray:
    """Lay out a global array over the mesh as ``sharding`` says.

    The data is copied once; devices holding the same replica share a read-only view.
    Halo cells inside the tensor hold the global values, those outside hold zero. For a
    partial sharding the first device of each partial group holds the value and the
    others the reduction's identity.

    >>> m = Mesh({"x": 2, "y": 3})
    >>> a = distribute(np.arange(36).reshape(6, 6), Sharding(m, [["x"], ["y"]]))
    >>> a.local((1, 2)).tolist()
    [[22, 23], [28, 29], [34, 35]]
    """
    if not isinstance(sharding, Sharding):
        raise TypeError(f"distribute: sharding must be a Sharding, got "
                        f"{type(sharding).__name__}")
    x = np.asarray(x)
    shape = sharding.check_shape(x.shape, "distribute")
    mesh = sharding.mesh
    base = np.array(x, copy=True)
    base.flags.writeable = False
    w0, w1 = sharding.windows(shape)
    cache: dict[tuple, np.ndarray] = {}
    locals_: list[np.ndarray] = []
    for i in range(mesh.size):
        key = tuple(w0[i].tolist()) + tuple(w1[i].tolist())
        arr = cache.get(key)
        if arr is None:
            g, loc = window_slices(w0[i], w1[i], shape)
            if all(s.start == a and s.stop == b for s, a, b in zip(g, w0[i], w1[i])):
                arr = base[g]  # window lies inside the tensor: a view suffices
            else:
                buf = np.zeros(tuple((w1[i] - w0[i]).tolist()), dtype=base.dtype)
                buf[loc] = base[g]
                arr = _frozen(buf)
            cache[key] = arr
        locals_.append(arr)
    if sharding.partial_axes:
        # Only the first device of each partial group keeps the value.
        first = np.all(mesh.coords[:, list(sharding.partial_axes)] == 0, axis=1)
        ident = identity(sharding.partial_kind, base.dtype)
        locals_ = [a if first[i] else np.broadcast_to(ident, a.shape)
                   for i, a in enumerate(locals_)]
    return MeshArray(mesh, locals_, sharding, shape)
