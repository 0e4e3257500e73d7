"""The collectives of MLIR's ``shard`` dialect on a :class:`MeshArray`, exact in NumPy.

Group rule (shared by every op that takes ``mesh_axes``): devices whose coordinates
agree on every mesh axis NOT in ``mesh_axes`` form one group; inside a group, devices
are ordered row-major over their coordinates on ``mesh_axes`` in the listed order.
``root``/``source`` arguments are in-group multi-indices (one coordinate per listed
axis). Splitting ops cut with the ceil-div rule of :func:`chunk_bounds`, so sizes that
do not divide work. Every op returns a new MeshArray without sharding; inputs are never
mutated. Diagrams below use a 2x2 mesh, devices labelled ``(row, col)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from .mesh import AxisLike, DeviceLike, _is_int
from .boxes import box_slices, copy_pieces, refill_boxes
from .mesh_array import MeshArray, _frozen
from .reduction import check_accumulation, check_reduction, reduce_arrays
from .sharding import Sharding, chunk_bounds

__all__ = ["all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather",
           "reduce", "reduce_scatter", "scatter", "permute", "shift", "update_halo"]


# -- argument checks shared by every op ------------------------------------------------
def _prep(op: str, x: MeshArray, mesh_axes: Iterable[AxisLike]) -> tuple[tuple[int, ...], np.ndarray]:
    if not isinstance(x, MeshArray):
        raise TypeError(f"{op}: expected a MeshArray, got {type(x).__name__}")
    axes = x.mesh.axes_indices(mesh_axes, what=op)
    return axes, x.mesh.group_array(axes)


def _rank(op: str, x: MeshArray) -> int:
    ranks = {a.ndim for a in x.locals}
    if len(ranks) > 1:
        raise ValueError(f"{op}: local arrays have different ranks {sorted(ranks)}")
    return ranks.pop()


def _tensor_axis(op: str, name: str, axis: int, x: MeshArray) -> int:
    return check_tensor_axis(op, name, axis, _rank(op, x))


def check_tensor_axis(op: str, name: str, axis: int, ndim: int) -> int:
    """Validate a tensor axis argument of a collective (``[0, ndim)``)."""
    if not _is_int(axis):
        raise TypeError(f"{op}: {name} must be an int, got {axis!r}")
    if not 0 <= axis < ndim:
        raise ValueError(f"{op}: {name} {axis} out of range [0, {ndim})")
    return int(axis)


def _root(op: str, x: MeshArray, axes: tuple[int, ...], root: Sequence[int] | int) -> int:
    return root_position(op, x.mesh, axes, root)


def root_position(op: str, mesh, axes: tuple[int, ...], root: Sequence[int] | int) -> int:
    """In-group multi-index ``root`` (one coordinate per axis of ``axes``) -> its
    position inside the group."""
    if _is_int(root):
        root = (root,)
    root = tuple(root)
    if len(root) != len(axes):
        raise ValueError(f"{op}: root {list(root)} has {len(root)} coordinates, mesh_axes "
                         f"{list(axes)} needs {len(axes)}")
    pos = 0
    for r, a in zip(root, axes):
        size = mesh.shape[a]
        if not _is_int(r) or not 0 <= r < size:
            raise ValueError(f"{op}: root coordinate {r!r} on mesh axis {a} out of range "
                             f"[0, {size})")
        pos = pos * size + int(r)
    return pos


def shift_sources(op: str, mesh, mesh_axes, shift_axis, offset: int, rotate: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """For :func:`shift`: each device's source (linear id) and whether it has one."""
    axes = mesh.axes_indices(mesh_axes, what=op)
    sa = mesh.axis_index(shift_axis, what=op)
    if sa not in axes:
        raise ValueError(f"{op}: shift_axis {shift_axis!r} is not among mesh_axes "
                         f"{list(mesh_axes)}")
    if not _is_int(offset):
        raise TypeError(f"{op}: offset must be an int, got {offset!r}")
    size = mesh.shape[sa]
    coords = mesh.coords
    src_c = coords[:, sa] - int(offset)
    if rotate:
        src_c = src_c % size
    valid = (src_c >= 0) & (src_c < size)
    stride = int(np.prod(mesh.shape[sa + 1:], dtype=np.int64))
    return np.arange(mesh.size) + (src_c - coords[:, sa]) * stride, valid


def _dtype(op: str, dtype, x: MeshArray) -> np.dtype:
    """The accumulation dtype: ``dtype`` if it holds every value of ``x``'s dtype."""
    if dtype is None:
        return x.dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: dtype {dtype!r} is not a NumPy dtype") from None
    check_accumulation(op, x.dtype, dt)
    return dt


def _same_shape(op: str, parts: Sequence[np.ndarray], group: Sequence[int], x: MeshArray,
                except_axis: int | None = None) -> None:
    check_same_shapes(op, x.mesh, [p.shape for p in parts], group, except_axis)


def check_same_shapes(op: str, mesh, shapes: Sequence[Sequence[int]], group: Sequence[int],
                      except_axis: int | None = None) -> None:
    """The group's local shapes must agree (outside ``except_axis`` when given)."""
    ref = tuple(shapes[0])
    for shape, dev in zip(shapes, group):
        a, b = list(shape), list(ref)
        if except_axis is not None:
            a[except_axis] = b[except_axis] = 0
        if a != b:
            what = "" if except_axis is None else f" outside axis {except_axis}"
            raise ValueError(f"{op}: shapes disagree{what} inside a device group: device "
                             f"{mesh.multi_index(group[0])} has {ref}, device "
                             f"{mesh.multi_index(dev)} has {tuple(shape)}")


def _pieces(a, axis: int, k: int) -> list:
    """The ``k`` ceil-div pieces of an array (NumPy or torch) along ``axis``."""
    b = chunk_bounds(a.shape[axis], k).tolist()
    idx = [slice(None)] * a.ndim
    out = []
    for i in range(k):
        idx[axis] = slice(b[i], b[i + 1])
        out.append(a[tuple(idx)])
    return out


def _result(x: MeshArray, arrays: Sequence[np.ndarray]) -> MeshArray:
    return MeshArray(x.mesh, [_frozen(np.asarray(a)) for a in arrays], None, None)


# -- the ops ---------------------------------------------------------------------------
def all_gather(x: MeshArray, mesh_axes: Iterable[AxisLike], gather_axis: int) -> MeshArray:
    """Concatenate the group's locals along ``gather_axis``; every member gets the result.

    Sizes along ``gather_axis`` may differ (uneven shards); other dims must agree.
    ``mesh_axes=[1], gather_axis=1``::

        (0,0) [1 2] (0,1) [5 6]    ->   (0,0),(0,1): [1 2 5 6]
        (1,0) [9 10] (1,1) [13 14] ->   (1,0),(1,1): [9 10 13 14]

    >>> from meshtensor import Mesh, Sharding, distribute
    >>> a = distribute(np.arange(4), Sharding(Mesh([2]), [[0]]))
    >>> all_gather(a, [0], 0).local(1).tolist()
    [0, 1, 2, 3]
    """
    axes, groups = _prep("all_gather", x, mesh_axes)
    ax = _tensor_axis("all_gather", "gather_axis", gather_axis, x)
    out = list(x.locals)
    glist = groups.tolist()
    jobs = []
    for g in glist:
        parts = [x.locals[i] for i in g]
        _same_shape("all_gather", parts, g, x, except_axis=ax)
        jobs.append(parts)
    for g, r in zip(glist, _concat_all(jobs, ax)):  # one buffer for every group's result
        for i in g:
            out[i] = r
    return _result(x, out)


def all_reduce(x: MeshArray, mesh_axes: Iterable[AxisLike], reduction: str = "sum",
               dtype=None) -> MeshArray:
    """Reduce the group's locals element-wise; every member gets the result.

    ``dtype`` is the accumulation and result type (may be wider than the input, as MLIR
    allows; one that cannot hold every input value, such as int32 -> int8, raises
    ValueError); inputs are converted to it before reducing. ``mesh_axes=[0]``, sum::

        (0,0) [1] (0,1) [2]   ->  (0,0) [4] (0,1) [6]
        (1,0) [3] (1,1) [4]   ->  (1,0) [4] (1,1) [6]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.int8([100]), np.int8([100])])
    >>> all_reduce(a, [0], dtype=np.int16).local(0).tolist()
    [200]
    """
    axes, groups = _prep("all_reduce", x, mesh_axes)
    check_reduction("all_reduce", reduction)
    dt = _dtype("all_reduce", dtype, x)
    out = list(x.locals)
    for g in groups.tolist():
        parts = [x.locals[i] for i in g]
        _same_shape("all_reduce", parts, g, x)
        r = reduce_arrays(parts, reduction, dt)
        for i in g:
            out[i] = r
    return _result(x, out)


def all_slice(x: MeshArray, mesh_axes: Iterable[AxisLike], slice_axis: int) -> MeshArray:
    """Each device keeps piece ``p`` (its in-group position) of its own local, cut
    ceil-div along ``slice_axis``. No communication; the inverse of ``all_gather`` on
    replicated data. ``mesh_axes=[1], slice_axis=0``::

        every device [1 2 3 4]  ->  (r,0) [1 2]  (r,1) [3 4]

    >>> from meshtensor import Mesh, Sharding, distribute
    >>> a = distribute(np.arange(5), Sharding.replicated(Mesh([2])))
    >>> [v.tolist() for v in all_slice(a, [0], 0).locals]
    [[0, 1, 2], [3, 4]]
    """
    axes, groups = _prep("all_slice", x, mesh_axes)
    ax = _tensor_axis("all_slice", "slice_axis", slice_axis, x)
    k = groups.shape[1]
    pos = x.mesh.in_group_index(axes)
    out = [_pieces(a, ax, k)[p] for a, p in zip(x.locals, pos.tolist())]
    return _result(x, out)


def all_to_all(x: MeshArray, mesh_axes: Iterable[AxisLike], split_axis: int,
               concat_axis: int) -> MeshArray:
    """Each device cuts its local into ``k`` pieces along ``split_axis`` (ceil-div) and
    sends piece ``j`` to the group's ``j``-th device, which concatenates what it gets in
    group order along ``concat_axis``. 1-D mesh of 2, ``split_axis=1, concat_axis=0``::

        dev 0 [[1 2 3 4]]   ->  dev 0 [[1 2] [5 6]]
        dev 1 [[5 6 7 8]]   ->  dev 1 [[3 4] [7 8]]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([[1, 2, 3, 4]]), np.array([[5, 6, 7, 8]])])
    >>> all_to_all(a, [0], 1, 0).local(1).tolist()
    [[3, 4], [7, 8]]
    """
    axes, groups = _prep("all_to_all", x, mesh_axes)
    sa = _tensor_axis("all_to_all", "split_axis", split_axis, x)
    ca = _tensor_axis("all_to_all", "concat_axis", concat_axis, x)
    k = groups.shape[1]
    dsts, jobs = [], []
    for g in groups.tolist():
        pieces = [_pieces(x.locals[i], sa, k) for i in g]
        for j, dst in enumerate(g):
            parts = [pieces[i][j] for i in range(k)]
            _same_shape("all_to_all", parts, g, x, except_axis=ca)
            dsts.append(dst)
            jobs.append(parts)
    out = list(x.locals)
    for dst, arr in zip(dsts, _concat_all(jobs, ca)):
        out[dst] = arr
    return _result(x, out)


def _concat_all(jobs: Sequence[Sequence[np.ndarray]], axis: int) -> list[np.ndarray]:
    """``[np.concatenate(parts, axis) for parts in jobs]``, written by slice assignment
    into views of ONE new buffer: a single allocation (so the pages are touched once,
    not once per device) and one copy of the data whatever the axis, in bands
    (:func:`~meshtensor.boxes.copy_pieces`); measured in ``benchmarks/bench_core.py``
    (per-device ``np.concatenate`` was ~3x a copy, per-group 1.6x-1.8x)."""
    if not jobs:
        return []
    shapes = []
    for parts in jobs:
        s = list(parts[0].shape)
        s[axis] = sum(p.shape[axis] for p in parts)
        shapes.append(tuple(s))
    dtype = np.result_type(*jobs[0])
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    buf = np.empty(sum(sizes), dtype=dtype)
    out, at = [], 0
    for parts, shape, n in zip(jobs, shapes, sizes):
        o = buf[at:at + n].reshape(shape)
        at += n
        pieces, pos = [], 0
        for p in parts:
            dst = [slice(0, m) for m in shape]
            dst[axis] = slice(pos, pos + p.shape[axis])
            pieces.append((tuple(dst), p))
            pos += p.shape[axis]
        copy_pieces(o, pieces)
        out.append(o)
    return out


def broadcast(x: MeshArray, mesh_axes: Iterable[AxisLike], root: Sequence[int]) -> MeshArray:
    """Copy the root's local to every device of its group (others' input is ignored).
    ``mesh_axes=[0], root=[0]``::

        (0,0) [1 2] (0,1) [3 4]   ->  (0,0) [1 2] (0,1) [3 4]
        (1,0) [* *] (1,1) [* *]   ->  (1,0) [1 2] (1,1) [3 4]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([7]), np.array([0])])
    >>> broadcast(a, [0], [0]).local(1).tolist()
    [7]
    """
    axes, groups = _prep("broadcast", x, mesh_axes)
    r = _root("broadcast", x, axes, root)
    out = list(x.locals)
    for g in groups.tolist():
        for i in g:
            out[i] = x.locals[g[r]]
    return _result(x, out)


def gather(x: MeshArray, mesh_axes: Iterable[AxisLike], gather_axis: int,
           root: Sequence[int]) -> MeshArray:
    """Like :func:`all_gather`, but only the root of each group gets the concatenation;
    other devices keep their input. ``mesh_axes=[1], root=[1]``::

        (0,0) [1 2] (0,1) [5 6]   ->  (0,0) [1 2] (0,1) [1 2 5 6]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([1]), np.array([2])])
    >>> [v.tolist() for v in gather(a, [0], 0, [1]).locals]
    [[1], [1, 2]]
    """
    axes, groups = _prep("gather", x, mesh_axes)
    ax = _tensor_axis("gather", "gather_axis", gather_axis, x)
    r = _root("gather", x, axes, root)
    out = list(x.locals)
    for g in groups.tolist():
        parts = [x.locals[i] for i in g]
        _same_shape("gather", parts, g, x, except_axis=ax)
        out[g[r]] = np.concatenate(parts, axis=ax)
    return _result(x, out)


def reduce(x: MeshArray, mesh_axes: Iterable[AxisLike], root: Sequence[int],
           reduction: str = "sum", dtype=None) -> MeshArray:
    """Like :func:`all_reduce`, but only the root gets the result; other devices keep
    their input (converted to ``dtype``, so every local shares one dtype).
    ``mesh_axes=[0], root=[1]``, sum::

        (0,0) [1] (0,1) [2]   ->  (0,0) [1] (0,1) [2]
        (1,0) [3] (1,1) [4]   ->  (1,0) [4] (1,1) [6]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([1]), np.array([2])])
    >>> [v.tolist() for v in reduce(a, [0], [0]).locals]
    [[3], [2]]
    """
    axes, groups = _prep("reduce", x, mesh_axes)
    check_reduction("reduce", reduction)
    r = _root("reduce", x, axes, root)
    dt = _dtype("reduce", dtype, x)
    out = [a.astype(dt, copy=False) for a in x.locals]
    for g in groups.tolist():
        parts = [x.locals[i] for i in g]
        _same_shape("reduce", parts, g, x)
        out[g[r]] = reduce_arrays(parts, reduction, dt)
    return _result(x, out)


def reduce_scatter(x: MeshArray, mesh_axes: Iterable[AxisLike], scatter_axis: int,
                   reduction: str = "sum", dtype=None) -> MeshArray:
    """Reduce the group's locals element-wise, then give piece ``p`` (ceil-div along
    ``scatter_axis``) to the group's ``p``-th device. ``mesh_axes=[1], scatter_axis=0``::

        (0,0) [[1 2] [3 4]]  (0,1) [[5 6] [7 8]]  ->  (0,0) [[6 8]]  (0,1) [[10 12]]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([1, 2]), np.array([3, 4])])
    >>> [v.tolist() for v in reduce_scatter(a, [0], 0).locals]
    [[4], [6]]
    """
    axes, groups = _prep("reduce_scatter", x, mesh_axes)
    ax = _tensor_axis("reduce_scatter", "scatter_axis", scatter_axis, x)
    check_reduction("reduce_scatter", reduction)
    dt = _dtype("reduce_scatter", dtype, x)
    k = groups.shape[1]
    out = list(x.locals)
    for g in groups.tolist():
        parts = [x.locals[i] for i in g]
        _same_shape("reduce_scatter", parts, g, x)
        pieces = _pieces(reduce_arrays(parts, reduction, dt), ax, k)
        for p, i in enumerate(g):
            out[i] = pieces[p]
    return _result(x, out)


def scatter(x: MeshArray, mesh_axes: Iterable[AxisLike], scatter_axis: int,
            root: Sequence[int]) -> MeshArray:
    """Cut the root's local into ``k`` pieces along ``scatter_axis`` (ceil-div) and give
    piece ``p`` to the group's ``p``-th device (others' input is ignored).
    ``mesh_axes=[0], scatter_axis=0, root=[1]``::

        (0,0) [* *]         ->  (0,0) [[1 2]]
        (1,0) [[1 2] [3 4]] ->  (1,0) [[3 4]]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.zeros(3, int), np.array([1, 2, 3])])
    >>> [v.tolist() for v in scatter(a, [0], 0, [1]).locals]
    [[1, 2], [3]]
    """
    axes, groups = _prep("scatter", x, mesh_axes)
    ax = _tensor_axis("scatter", "scatter_axis", scatter_axis, x)
    r = _root("scatter", x, axes, root)
    k = groups.shape[1]
    out = list(x.locals)
    for g in groups.tolist():
        pieces = _pieces(x.locals[g[r]], ax, k)
        for p, i in enumerate(g):
            out[i] = pieces[p]
    return _result(x, out)


def permute(x: MeshArray, pairs: Iterable[tuple[DeviceLike, DeviceLike]]) -> MeshArray:
    """Point-to-point sends: each ``(source, destination)`` pair gives the destination
    the source's input. A destination may appear once; a source may send to several; a
    device that receives nothing keeps its input. Devices are coordinates or linear
    indices. ``pairs=[((0,0), (1,1))]``::

        (0,0) [1] (0,1) [2]   ->  (0,0) [1] (0,1) [2]
        (1,0) [3] (1,1) [4]   ->  (1,0) [3] (1,1) [1]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([1]), np.array([2])])
    >>> [v.tolist() for v in permute(a, [(0, 1), (1, 0)]).locals]
    [[2], [1]]
    """
    if not isinstance(x, MeshArray):
        raise TypeError(f"permute: expected a MeshArray, got {type(x).__name__}")
    out = list(x.locals)
    for d, s in permute_sources("permute", x.mesh, pairs).items():
        out[d] = x.locals[s]
    return _result(x, out)


def permute_sources(op: str, mesh, pairs: Iterable[tuple[DeviceLike, DeviceLike]]) -> dict[int, int]:
    """``{destination: source}`` (linear ids) of :func:`permute`'s pairs, checked: each
    pair is two devices, and no destination receives twice."""
    src_of: dict[int, int] = {}
    for n, pair in enumerate(pairs):
        try:
            src, dst = pair
        except (TypeError, ValueError):
            raise ValueError(f"{op}: pairs[{n}] must be (source, destination), got "
                             f"{pair!r}") from None
        s, d = mesh.linear_index(src), mesh.linear_index(dst)
        if d in src_of:
            raise ValueError(f"{op}: destination {mesh.multi_index(d)} receives from "
                             f"both {mesh.multi_index(src_of[d])} and {mesh.multi_index(s)}")
        src_of[d] = s
    return src_of


def shift(x: MeshArray, mesh_axes: Iterable[AxisLike], shift_axis: AxisLike, offset: int,
          rotate: bool = False) -> MeshArray:
    """Move locals along mesh axis ``shift_axis`` toward higher coordinates: the device
    at coordinate ``c`` receives from ``c - offset``. With ``rotate`` indices wrap (like
    ``numpy.roll``); without, devices with no source keep their input.
    ``shift_axis`` must be among ``mesh_axes``. 1x4 mesh, ``offset=2, rotate``::

        [1] [2] [3] [4]  ->  [3] [4] [1] [2]

    >>> from meshtensor import Mesh, MeshArray
    >>> a = MeshArray.from_locals(Mesh([4]), [np.array([v]) for v in [1, 2, 3, 4]])
    >>> [v.item() for v in shift(a, [0], 0, 1).locals]
    [1, 1, 2, 3]
    """
    _prep("shift", x, mesh_axes)
    src, valid = shift_sources("shift", x.mesh, mesh_axes, shift_axis, offset, rotate)
    out = [x.locals[s] if ok else a
           for a, s, ok in zip(x.locals, src.tolist(), valid.tolist())]
    return _result(x, out)


def update_halo(x: MeshArray, sharding: Sharding) -> MeshArray:
    """Refill every halo cell inside the tensor from the device whose core holds that
    position (lower halo from the previous device's last cells, upper halo from the
    next device's first cells, corners included); halo cells outside the tensor keep
    their values (no wraparound). ``x``'s locals must be laid out as ``sharding`` says.
    1-D mesh of 2, ``halo_sizes=[1, 1]`` on ``[0 1 2 3]``::

        dev 0 [0 | 0 1 | *]   ->  dev 0 [0 | 0 1 | 2]
        dev 1 [* | 2 3 | 0]   ->  dev 1 [1 | 2 3 | 0]

    >>> from meshtensor import Mesh, Sharding, MeshArray
    >>> s = Sharding(Mesh([2]), [[0]], halo_sizes=[1, 1])
    >>> a = MeshArray.from_locals(Mesh([2]), [np.array([0, 0, 1, 9]), np.array([9, 2, 3, 0])])
    >>> [v.tolist() for v in update_halo(a, s).locals]
    [[0, 0, 1, 2], [1, 2, 3, 0]]
    """
    if not isinstance(x, MeshArray):
        raise TypeError(f"update_halo: expected a MeshArray, got {type(x).__name__}")
    if not isinstance(sharding, Sharding):
        raise TypeError(f"update_halo: sharding must be a Sharding, got "
                        f"{type(sharding).__name__}")
    try:
        arr = x.with_sharding(sharding, x.global_shape)
    except ValueError as e:
        raise ValueError(f"update_halo: {e}") from None
    receivers, moves = _halo_moves(sharding, arr.global_shape)
    # Only halo cells move: each receiver copies its own array once, then each halo
    # box is read from its owner's core (cores are never written, so order is free).
    # Owners agree with the receiver on every non-split axis: a replica, or the same
    # partial term.
    out = list(x.locals)
    fresh = dict(zip(receivers, _concat_all([[x.locals[r]] for r in receivers], 0)))
    for s, r, dst, src in moves:
        fresh[r][dst] = x.locals[s][src]
    for r, arr_r in fresh.items():
        out[r] = arr_r
    return _result(x, out)


@lru_cache(maxsize=64)
def _halo_moves(sharding: Sharding, shape: tuple[int, ...]
                ) -> tuple[list[int], list[tuple[int, int, tuple, tuple]]]:
    """``update_halo``'s receivers and its copies ``(owner, receiver, slices in the
    receiver's array, slices in the owner's)``, per layout (a stencil refills the same
    halos every step)."""
    w0, _ = sharding.windows(shape)
    owner, recv, lo, hi = refill_boxes(sharding, shape)
    moves = [(s, r, box_slices(a, b, w0[r]), box_slices(a, b, w0[s]))
             for s, r, a, b in zip(owner.tolist(), recv.tolist(), lo, hi)]
    return np.unique(recv).tolist(), moves


#: the NumPy backend of every host op (meshtensor.comm_ops), by its declared name
NUMPY = {"all_gather": all_gather, "all_reduce": all_reduce, "all_slice": all_slice,
         "all_to_all": all_to_all, "broadcast": broadcast, "gather": gather, "reduce": reduce,
         "reduce_scatter": reduce_scatter, "scatter": scatter, "permute": permute,
         "shift": shift, "update_halo": update_halo}
