"""``plan_reshard``: the planner's entry point and its cache.

Plans are immutable values, cached on ``(src, tgt, global_shape, itemsize)``: the last
``PLAN_CACHE_SIZE`` pairs, holding at most ``PLAN_CACHE_BYTES`` of transfer rows
together. A repeated call returns the same plan object.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import NamedTuple, Sequence

from ..mesh import _is_int
from ..sharding import Sharding
from .even import EVEN_PLAN_MAX_DEVICES, even_plan  # noqa: F401 (named in the docs)
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
    return sum(a.nbytes for st in steps
               if isinstance(st, TransferStep) and "rows" in st.__dict__ for a in st.rows)


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    nbytes: int


# A cached plan is a list (made and read on every call: cheaper than an object):
# the plan, the argument objects it was last asked with (a call with these very objects
# skips the argument checks: they were checked), its transfer rows' bytes, how often it
# was hit, that count at the last eviction sweep, and its key in ``PlanCache._fast``.
PLAN, SRC, TGT, SHAPE, ITEMSIZE, NBYTES, USED, MARK, FAST = range(9)


#: What ``PlanCache.last`` holds before any call: its argument slots hold an object no
#: caller has, so it matches no call (not even ``plan_reshard(None, None, None, None)``).
_NOBODY = object()
_NO_ENTRY = [None, _NOBODY, _NOBODY, _NOBODY, _NOBODY, 0, 0, 0, None]


class PlanCache:
    """Plans by ``(src, tgt, global_shape, itemsize)``, bounded by count and by the bytes
    of their transfer rows; a plan larger than the whole byte budget is returned but not
    kept. Rows a cached plan builds later (the fast path's transfer steps build them
    when first read; on at most ``EVEN_PLAN_MAX_DEVICES`` devices they are small) are
    counted when the cache is full or ``cache_info()`` is asked. Eviction is least
    recently used, as a second-chance clock: the oldest entry goes unless it was hit
    since the last sweep (then it goes to the back), so a hit only counts itself
    instead of reordering the cache.

    :func:`plan_reshard` finds a repeated call through ``last`` (the entry of the last
    call) or ``_fast`` (keyed on the shardings' stored hashes), and checks that the very
    argument objects are those the entry was asked with; everything else goes through
    :meth:`lookup`."""

    def __init__(self, maxsize: int, maxbytes: int) -> None:
        self.maxsize, self.maxbytes = maxsize, maxbytes
        self._plans: OrderedDict = OrderedDict()  # (src, tgt, shape, itemsize) -> entry
        self._fast: dict = {}  # (src._hash, tgt._hash, shape, itemsize) -> entry
        self._nbytes = 0
        self.misses = 0
        self._gone_hits = 0  # hits of entries no longer cached
        self.last = _NO_ENTRY  # the entry the last call found or made
        # cached plans whose transfer steps had not built their rows: key -> (entry, steps)
        self._later: dict = {}

    def lookup(self, src, tgt, global_shape, itemsize) -> ReshardPlan:
        """Check the arguments, then find or make the plan."""
        # arguments not in normal form are checked, then looked up as their normal
        # form (4.0 == 4 and (4.0,) == (4,): they would hit the cache unchecked)
        if type(itemsize) is not int or type(global_shape) is not tuple:
            return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
        for n in global_shape:
            if type(n) is not int:
                return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
        key = (src, tgt, global_shape, itemsize)
        try:
            e = self._plans.get(key)
        except TypeError:  # an unhashable src or tgt: not a Sharding, say so
            return plan_reshard(src, tgt, *checked_args(src, tgt, global_shape, itemsize))
        if e is None:
            return self.miss(key)
        e[USED] += 1
        # the next call with these objects takes the fast path (keyed on the shardings'
        # stored hashes: a tuple of ints hashes in C, a Sharding in Python)
        if self._fast.get(e[FAST]) is e:
            del self._fast[e[FAST]]
        e[SRC], e[TGT], e[SHAPE], e[ITEMSIZE] = key
        e[FAST] = (src._hash, tgt._hash, global_shape, itemsize)
        self._fast[e[FAST]] = e
        self.last = e
        return e[PLAN]

    def miss(self, key: tuple) -> ReshardPlan:
        """Plan ``key = (src, tgt, global_shape, itemsize)``, not in the cache, and keep it."""
        plan = even_plan(*key)
        size = 0  # the fast path builds no rows
        if plan is None:
            normal = key[:2] + checked_args(*key)
            if normal != key:  # (a shape like range(4)): one entry per normal form
                return plan_reshard(*normal)
            plan = general_plan(*normal)
            size = steps_nbytes(plan.steps)  # the general planner builds rows as it goes
        self.misses += 1
        if size > self.maxbytes:
            return plan
        src, tgt, shape, itemsize = key  # (an entry: see PLAN, SRC, ... above)
        e = [plan, src, tgt, shape, itemsize, size, 0, 0, (src._hash, tgt._hash, shape, itemsize)]
        self._plans[key] = e
        self._fast[e[FAST]] = e
        self.last = e
        self._nbytes += size
        if size == 0:  # transfer steps that build their rows later are counted then
            later = [st for st in plan.steps if st.op == "transfers"]
            if later:
                self._later[key] = (e, later)
        if len(self._plans) > self.maxsize or self._nbytes > self.maxbytes:
            self._settle()
        return plan

    def _settle(self) -> None:
        """Count the rows that cached plans built since they were cached (dropping a
        plan that now exceeds the whole budget), then evict down to the bounds."""
        for key, (e, later) in list(self._later.items()):
            if self._plans.get(key) is not e:
                del self._later[key]  # evicted meanwhile
                continue
            built = [st for st in later if "rows" in st.__dict__]
            if not built:
                continue
            size = steps_nbytes(built)
            rest = [st for st in later if "rows" not in st.__dict__]
            if rest:
                self._later[key] = (e, rest)
            else:
                del self._later[key]
            if e[NBYTES] + size > self.maxbytes:
                self._drop(key)
                continue
            e[NBYTES] += size
            self._nbytes += size
        if len(self._plans) > self.maxsize or self._nbytes > self.maxbytes:
            self._evict()

    def _drop(self, key: tuple) -> None:
        e = self._plans.pop(key)
        self._nbytes -= e[NBYTES]
        self._gone_hits += e[USED]
        if self._fast.get(e[FAST]) is e:
            del self._fast[e[FAST]]
        if self.last is e:
            self.last = _NO_ENTRY

    def _evict(self) -> None:
        plans = self._plans
        while len(plans) > self.maxsize or self._nbytes > self.maxbytes:
            key, e = next(iter(plans.items()))
            if e[USED] != e[MARK]:  # hit since the last sweep: a second chance
                e[MARK] = e[USED]
                plans.move_to_end(key)
                continue
            self._drop(key)

    def cache_clear(self) -> None:
        self._plans.clear()
        self._fast.clear()
        self._later.clear()
        self.last = _NO_ENTRY
        self._nbytes = 0
        self.misses = self._gone_hits = 0

    @property
    def hits(self) -> int:
        # a hit counts on its entry only (one increment on the hot path)
        return self._gone_hits + sum(e[USED] for e in self._plans.values())

    def cache_info(self) -> CacheInfo:
        self._settle()
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
    repeated call returns the same plan in well under a microsecond;
    ``plan_reshard.cache_clear()`` empties the cache, ``plan_reshard.cache_info()``
    reports hits, misses, size, bytes.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2, 3])
    >>> p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6))
    >>> p.bytes_moved == p.lower_bound_bytes, [s.op for s in p.steps]
    (True, ['transfers'])
    >>> plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6)) is p
    True
    """
    # The hot path: the very objects of a call already answered (so already checked),
    # first the last one answered (a loop resharding alike every step), then any.
    cache = PLANS
    e = cache.last
    if e[3] is global_shape and e[1] is src and e[2] is tgt and e[4] is itemsize:
        e[6] += 1  # (entry fields by number on the hot path: SHAPE, SRC, ..., USED)
        return e[0]
    try:
        e = cache._fast.get((src._hash, tgt._hash, global_shape, itemsize))
    except (AttributeError, TypeError):  # not a Sharding, unhashable
        return cache.lookup(src, tgt, global_shape, itemsize)
    if e is not None:
        if e[3] is global_shape and e[1] is src and e[2] is tgt and e[4] is itemsize:
            e[6] += 1
            cache.last = e
            return e[0]
        return cache.lookup(src, tgt, global_shape, itemsize)
    # Not seen with these objects: a miss unless equal arguments were (checked as
    # lookup does, without its call)
    if type(itemsize) is int and type(global_shape) is tuple:
        for n in global_shape:
            if type(n) is not int:
                break
        else:
            key = (src, tgt, global_shape, itemsize)
            if key not in cache._plans:
                return cache.miss(key)
    return cache.lookup(src, tgt, global_shape, itemsize)


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
