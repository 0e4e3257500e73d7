"""``plan_reshard``: the planner's entry point and its cache.

Plans are immutable values, cached on ``(src, tgt, global_shape, itemsize)``: the last
``PLAN_CACHE_SIZE`` pairs, holding at most ``PLAN_CACHE_BYTES`` of transfer rows
together. A repeated call returns the same plan object.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial
from typing import NamedTuple, Sequence

from ..mesh import _is_int
from ..sharding import Sharding
from .even import even_plan
from .flows import Rows
from .plan import ReshardPlan
from .planner import general_plan
from .steps import Step, TransferStep

#: How many (src, tgt, shape, itemsize) plans :func:`plan_reshard` keeps, and how many
#: bytes of transfer rows they may hold together (a 16384-device halo plan alone has
#: ~190k rows, ~12 MB: a count bound alone could keep GBs).
PLAN_CACHE_SIZE = 256
PLAN_CACHE_BYTES = 256 << 20


def steps_nbytes(steps: Sequence[Step]) -> int:
    """Bytes of the transfer rows the steps have built (collective flows are closed
    form)."""
    return sum(a.nbytes for st in steps if isinstance(st, TransferStep) and "rows" in st.__dict__
               for a in st.rows)


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    nbytes: int


class PlanCache:
    """Least-recently-used plans, bounded by count and by the bytes of their transfer
    rows; a plan larger than the whole byte budget is returned but not kept. Rows a
    cached plan builds later (its transfer steps build them when first read) are
    counted then. :func:`plan_reshard` looks plans up itself (one call less on a hit)
    and calls :meth:`miss` for the rest."""

    def __init__(self, maxsize: int, maxbytes: int) -> None:
        self.maxsize, self.maxbytes = maxsize, maxbytes
        self._plans: OrderedDict = OrderedDict()
        self._nbytes = 0
        self.hits = self.misses = 0

    def miss(self, key: tuple) -> ReshardPlan:
        """Plan ``key = (src, tgt, global_shape, itemsize)``, not in the cache, and keep it."""
        plan = even_plan(*key)
        if plan is None:
            normal = key[:2] + checked_args(*key)
            if normal != key:  # (a shape like range(4)): one entry per normal form
                return plan_reshard(*normal)
            plan = general_plan(*normal)
        size = steps_nbytes(plan.steps)  # the general planner builds rows as it goes
        self.misses += 1
        if size > self.maxbytes:
            return plan
        plans = self._plans
        plans[key] = (plan, size)
        self._nbytes += size
        for st in plan.steps:
            if isinstance(st, TransferStep) and "rows" not in st.__dict__:
                st.__dict__["_on_rows"] = partial(self._built, key, plan)
        if len(plans) > self.maxsize or self._nbytes > self.maxbytes:
            self._evict()
        return plan

    def _built(self, key: tuple, plan: ReshardPlan, rows: Rows) -> None:
        """A cached plan's transfer step built its rows: count them."""
        got = self._plans.get(key)
        if got is None or got[0] is not plan:
            return  # evicted meanwhile
        size = sum(a.nbytes for a in rows)
        if got[1] + size > self.maxbytes:
            del self._plans[key]
            self._nbytes -= got[1]
            return
        self._plans[key] = (plan, got[1] + size)
        self._nbytes += size
        self._plans.move_to_end(key)  # just used
        self._evict()

    def _evict(self) -> None:
        while len(self._plans) > self.maxsize or self._nbytes > self.maxbytes:
            _, (_, dropped) = self._plans.popitem(last=False)
            self._nbytes -= dropped

    def cache_clear(self) -> None:
        self._plans.clear()
        self._nbytes = 0
        self.hits = self.misses = 0

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self._plans), self._nbytes)


#: The cache :func:`plan_reshard` uses.
PLANS = PlanCache(PLAN_CACHE_SIZE, PLAN_CACHE_BYTES)


def plan_reshard(src: Sharding, tgt: Sharding, global_shape: Sequence[int],
                 itemsize: int = 4) -> ReshardPlan:
    """Plan the data movement from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    Works for every pair of shardings on one mesh (split, replicated, several axes per
    dim, swaps, uneven and empty shards, halos, explicit offsets, partial sources).
    Resharding into a partial sharding is refused unless ``src == tgt``. Plans are
    immutable values cached on ``(src, tgt, global_shape, itemsize)`` (the last
    ``PLAN_CACHE_SIZE`` pairs, at most ``PLAN_CACHE_BYTES`` of transfer rows): a
    repeated call returns the same plan in microseconds; ``plan_reshard.cache_clear()``
    empties the cache, ``plan_reshard.cache_info()`` reports hits, misses, size, bytes.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2, 3])
    >>> p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6))
    >>> p.bytes_moved == p.lower_bound_bytes, [s.op for s in p.steps]
    (True, ['transfers'])
    >>> plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6)) is p
    True
    """
    cache = PLANS
    # arguments not in normal form are checked, then looked up as their normal form
    # (4.0 == 4 and (4.0,) == (4,): they would hit the cache unchecked)
    if type(itemsize) is not int or type(global_shape) is not tuple:
        return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
    for n in global_shape:
        if type(n) is not int:
            return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
    key = (src, tgt, global_shape, itemsize)
    try:
        got = cache._plans.get(key)
    except TypeError:  # an unhashable src or tgt: not a Sharding, say so
        return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
    if got is None:
        return cache.miss(key)
    cache.hits += 1
    cache._plans.move_to_end(key)
    return got[0]


plan_reshard.cache_clear = PLANS.cache_clear  # type: ignore[attr-defined]
plan_reshard.cache_info = PLANS.cache_info  # type: ignore[attr-defined]


def checked_args(src, tgt, global_shape, itemsize) -> tuple[tuple[int, ...], int]:
    """Validate :func:`plan_reshard`'s arguments (those the fast path took never get
    here); the shape and itemsize in normal form: ``(4, 4)``, ``[4, 4]`` and
    ``np.array([4, 4])`` are one shape."""
    for name, s in (("src", src), ("tgt", tgt)):
        if not isinstance(s, Sharding):
            raise TypeError(f"plan_reshard: {name} must be a Sharding, got {type(s).__name__}")
    if src.mesh != tgt.mesh:
        raise ValueError(f"plan_reshard: src is on mesh {src.mesh!r}, tgt on {tgt.mesh!r}")
    if not _is_int(itemsize) or itemsize < 1:
        raise ValueError(f"plan_reshard: itemsize must be a positive int, got {itemsize!r}")
    shape = src.check_shape(global_shape, "plan_reshard (src)")
    tgt.check_shape(shape, "plan_reshard (tgt)")
    # every byte count of a plan is at most what all devices hold of the tensor, times
    # the longest route for link bytes; the planner counts in int64, so refuse what
    # could wrap instead of printing garbage
    total = math.prod(shape) * int(itemsize) * src.mesh.size
    longest = max(1, sum(n - 1 for n in src.mesh.shape))
    if total * longest >= 2 ** 63:
        raise ValueError(f"plan_reshard: global_shape {shape} x itemsize {itemsize} on "
                         f"{src.mesh.size} devices holds up to {total:.3e} bytes ({longest} "
                         f"hops on the longest route), past the int64 byte counts a plan "
                         f"reports (< 2**63 = 9.223e+18 byte-hops)")
    if tgt.partial_axes and tgt != src:
        raise ValueError(f"plan_reshard: cannot reshard {src} into the partial sharding {tgt}: "
                         f"a partial target is only reachable from itself (reduce first, then "
                         f"split the work that produces partial values)")
    return shape, int(itemsize)
