"""The planner's fast path: even layouts on small meshes, planned in closed form.

On a mesh of at most ``EVEN_PLAN_MAX_DEVICES`` devices, with no partial axes, halos or
explicit offsets and every dim divisible by its shard count in both shardings, every
device's box has the same extents, so bytes are closed forms over the device count and
the steps equal what :mod:`.planner` would choose, decided without per-device arrays.
Anything else goes to :mod:`.planner` (which also validates the arguments).
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..boxes import held_boxes
from ..mesh import Mesh
from ..sharding import Sharding
from .plan import ReshardPlan, new_plan
from .planner import next_move
from .steps import CollectiveStep, Step, TransferStep


#: Meshes up to this many devices plan even layouts in closed form (:func:`even_plan`).
EVEN_PLAN_MAX_DEVICES = 64
# Steps are made with tuple.__new__: the named tuple's own __new__ is a Python call.
_new = tuple.__new__
# Byte counts the fast path computes in Python ints must fit the general planner's
# int64 boxes, or the two would disagree (a total over all devices stays below this).
_INT64_SAFE = 2 ** 62


def even_lower_bound(src: Sharding, tgt: Sharding, shape, n: int, vt: int, itemsize: int) -> int:
    """:func:`~.planner.lower_bound` for even layouts: ``n`` devices each need ``vt`` elements and keep
    the overlap of their two boxes. Once the common prefix of split axes is cut off, on
    every dim one block usually lies inside the other (the smaller block's extent is
    kept, a closed form); only on a dim split further on both sides does the overlap
    depend on the device, and there the blocks are intersected device by device (at
    most ``EVEN_PLAN_MAX_DEVICES``, plain ints: cheaper than NumPy's calls here)."""
    cs, ts, sizes = src.split_axes, tgt.split_axes, src.mesh.shape
    kept, hard = 1, []
    for d, m in enumerate(shape):
        a = cs[d] if d < len(cs) else ()
        b = ts[d] if d < len(ts) else ()
        p = 0
        while p < len(a) and p < len(b) and a[p] == b[p]:
            p += 1
        if p < len(a) and p < len(b):
            hard.append(d)
            continue
        for ax in (a if len(a) > len(b) else b):
            m //= sizes[ax]
        kept *= m
    if not hard:
        return n * (vt - kept) * itemsize
    s_at, t_at = dim_starts(src, shape), dim_starts(tgt, shape)
    ks, kt = src._counts, tgt._counts  # (a hard dim is split on both sides)
    cols = [(s_at[d], t_at[d], shape[d] // ks[d], shape[d] // kt[d]) for d in hard]
    total = 0
    for i in range(n):
        v = 1
        for s0, t0, es, et in cols:
            x, y = s0[i], t0[i]
            hi = x + es if x + es < y + et else y + et
            v *= hi - (x if x > y else y)
            if v <= 0:
                v = 0
                break
        total += v
    return (n * vt - kept * total) * itemsize


@lru_cache(maxsize=1024)
def dim_starts(s: Sharding, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Per dim, every device's block start (plain ints, for the fast path)."""
    return tuple(map(tuple, held_boxes(s, shape)[0].T.tolist()))


def even_plan(src, tgt, shape, itemsize) -> ReshardPlan | None:
    """The planner's fast path, or None when it does not apply: a mesh of at most
    ``EVEN_PLAN_MAX_DEVICES`` devices, no partial axes, halos or explicit offsets, and
    every dim's size divisible by its shard count in both shardings.

    Then every device's box has the same extents, every layout the patterns of
    :func:`~.planner.next_move` pass through is even too (each dim's axes stay a prefix
    of the source's or the target's), and bytes are closed forms over ``n`` devices
    holding ``V`` elements each before the step, group size ``k``: ``all_slice`` 0,
    ``all_gather`` ``n (k-1) V``, ``all_to_all`` ``n (k-1) V / k``. The steps equal what
    the general planner (:func:`~.planner.plain`) chooses, decided without per-device
    arrays; their flows and rows are built when first read. Any argument this path
    does not recognise goes to the general planner, which validates it.

    >>> from meshtensor import Mesh
    >>> m = Mesh([2, 2])
    >>> [s.op for s in even_plan(Sharding(m, [[0]]), Sharding(m, [[0, 1]]), (8,), 4).steps]
    ['all_slice']
    >>> even_plan(Sharding(m, [[0]]), Sharding(m, [[0, 1]]), (7,), 4) is None  # uneven
    True
    """
    if type(src) is not Sharding or type(tgt) is not Sharding or type(shape) is not tuple \
            or type(itemsize) is not int or itemsize < 1 \
            or not (src._split_only and tgt._split_only):
        return None
    mesh = src.mesh
    n = mesh.size
    if n > EVEN_PLAN_MAX_DEVICES or (tgt.mesh is not mesh and tgt.mesh != mesh):
        return None
    ks, kt = src._counts, tgt._counts
    rank = len(shape)
    if len(ks) > rank or len(kt) > rank:
        return None
    for x in shape:
        if type(x) is not int or x < 0:
            return None
    vs = vt = math.prod(shape)
    if vs * itemsize * n >= _INT64_SAFE:
        return None  # the general planner's int64 arithmetic decides (and refuses) these
    for d, k in enumerate(ks):
        if shape[d] % k:
            return None
        vs //= k
    for d, k in enumerate(kt):
        if shape[d] % k:
            return None
        vt //= k
    cs, ts = src.split_axes, tgt.split_axes
    if cs == ts:  # (same mesh, only split axes: the shardings are equal)
        return new_plan(src, tgt, shape, itemsize, (), 0)
    sizes = mesh.shape
    # Pure refinements and coarsenings: the steps next_move would pick, written out
    # (one all_slice per dim in dim order; one all_gather per dim, highest dim first).
    finer = extra_dims(cs, ts)
    if finer is not None:
        steps: list[Step] = []
        before = src
        for d in finer:
            after = tgt if d == finer[-1] else layout(mesh, ts[:d + 1] + cs[d + 1:])
            axes = ts[d][len(cs[d]) if d < len(cs) else 0:]
            steps.append(_new(CollectiveStep, ("all_slice", axes, (("slice_axis", d),), before,
                                               after, 0, shape, itemsize)))
            before = after
        return new_plan(src, tgt, shape, itemsize, tuple(steps), 0)
    coarser = extra_dims(ts, cs)
    if coarser is not None:
        steps, before, vol = [], src, vs
        for d in reversed(coarser):
            axes = cs[d][len(ts[d]) if d < len(ts) else 0:]
            k = math.prod([sizes[a] for a in axes])
            after = tgt if d == coarser[0] else layout(mesh, cs[:d] + ts[d:])
            steps.append(_new(CollectiveStep, ("all_gather", axes, (("gather_axis", d),), before,
                                               after, n * (k - 1) * vol * itemsize, shape,
                                               itemsize)))
            before, vol = after, vol * k
        return new_plan(src, tgt, shape, itemsize, tuple(steps), n * (vt - vs) * itemsize)
    lb = even_lower_bound(src, tgt, shape, n, vt, itemsize)
    c = list(cs) + [()] * (rank - len(cs))
    t = list(ts) + [()] * (rank - len(ts))
    steps, before, vol, spent = [], src, vs, 0
    for _ in range(4 * mesh.ndim + 4):
        if c == t:
            return new_plan(src, tgt, shape, itemsize, tuple(steps), lb)
        move = next_move(c, t)
        if move is None:
            break
        op, axes, params = move
        k = math.prod([sizes[a] for a in axes])
        if op == "all_gather":
            nbytes = n * (k - 1) * vol * itemsize
            vol *= k
        elif op == "all_to_all":
            nbytes = n * (k - 1) * (vol // k) * itemsize
        else:
            nbytes = 0
            vol //= k
        spent += nbytes
        if spent > lb:
            break  # bytes only add up: the transfers (exactly lb) win
        after = tgt if c == t else layout(mesh, tuple(c))
        steps.append(_new(CollectiveStep, (op, axes, params, before, after, nbytes, shape,
                                           itemsize)))
        before = after
    return new_plan(src, tgt, shape, itemsize,
                    (_new(TransferStep, ("transfers", (), (), src, tgt, lb, shape, itemsize)),),
                    lb)


def extra_dims(coarse: tuple[tuple[int, ...], ...], fine: tuple[tuple[int, ...], ...]
               ) -> list[int] | None:
    """The dims where split axes ``fine`` extend ``coarse``, when on every dim ``coarse``
    is a prefix of ``fine`` (``fine`` refines ``coarse``); else None."""
    if len(coarse) > len(fine):  # (trailing unsplit dims are dropped)
        return None
    out = []
    for d, b in enumerate(fine):
        a = coarse[d] if d < len(coarse) else ()
        if b[:len(a)] != a:
            return None
        if len(b) > len(a):
            out.append(d)
    return out


@lru_cache(maxsize=1024)
def layout(mesh: Mesh, split: tuple[tuple[int, ...], ...]) -> Sharding:
    """An intermediate layout of the fast path, interned (plans pass through few)."""
    return Sharding._of_split(mesh, split)
