"""The cost model: what a plan step moves, and over which links.

Assumptions (the planner only compares these numbers):

- Every step is a set of *flows*: ``nbytes`` sent directly from one device to another.
  ``bytes`` counts what devices receive from other devices; a device's own data never
  counts.
- Collectives use the direct (one-shot) algorithms: all_gather, all_to_all and
  reduce_scatter send each piece straight to the device that needs it; all_reduce is a
  reduce_scatter followed by an all_gather (the bandwidth-optimal schedule: each device
  receives ``2 * (B - B/k)`` of its ``B`` bytes in a group of ``k``), its pieces cut
  ceil-div over the flattened local array.
- Links: a mesh connects each device to its neighbours along every axis (no
  wraparound unless a ``wrap`` flag says the axis is a ring), one link per direction. Traffic follows dimension-ordered (XY) routing:
  a flow first travels along mesh axis 0 to the receiver's coordinate, then along axis
  1, and so on. It crosses ``hops = sum |a_i - b_i|`` links (the Manhattan distance)
  and ``link_bytes = nbytes * hops``; a link's *load* is the bytes of all flows routed
  over it, and ``max_link_bytes`` the load of the busiest link.

Two representations, one interface (``total``, ``received``, ``link_loads``,
``link_bytes``, ``max_link_bytes``, ``pairs``):

- :class:`Flows` lists point-to-point flows (a transfer step: only pairs that really
  exchange data exist);
- :class:`GroupFlows` describes a collective in closed form, without listing its
  ``k * (k - 1)`` pairs per group: member ``i`` of a group sends member ``j`` (``i !=
  j``) ``send[i] + recv[j] + u[i] * w[j]`` bytes. Totals, per-device bytes and link
  loads are sums of prefix sums, linear in the number of devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .mesh import Mesh


def _wrap(mesh: Mesh, wrap) -> tuple[bool, ...]:
    """Per axis: whether it has wraparound links (a ring); ``None``: no axis does."""
    if wrap is None:
        return (False,) * mesh.ndim
    w = tuple(bool(x) for x in wrap)
    if len(w) != mesh.ndim:
        raise ValueError(f"wrap: one flag per mesh axis ({mesh.ndim}), got {list(wrap)}")
    return w


def hops(mesh: Mesh, src: np.ndarray | int, dst: np.ndarray | int,
         wrap: tuple[bool, ...] | None = None) -> np.ndarray:
    """Links crossed from ``src`` to ``dst`` (linear indices) under XY routing; on an
    axis with wraparound links (``wrap[a]``) a route goes the shorter way round.

    >>> hops(Mesh([4, 4]), 0, 15).item(), hops(Mesh([4, 4]), 0, 15, wrap=(True, True)).item()
    (6, 2)
    """
    c = mesh.coords
    d = np.abs(c[np.asarray(src)] - c[np.asarray(dst)])
    w = _wrap(mesh, wrap)
    if any(w):
        size = np.asarray(mesh.shape)
        d = np.where(np.asarray(w), np.minimum(d, size - d), d)
    return d.sum(axis=-1)


def xy_link_loads(mesh: Mesh, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                  wrap: tuple[bool, ...] | None = None) -> np.ndarray:
    """Bytes on every directed link when each flow ``src[i] -> dst[i]`` of ``nbytes[i]``
    follows XY routing (axis 0 first).

    Returns ``loads`` of shape ``(ndim, 2, *mesh.shape)``: ``loads[a, 0][c]`` is the
    link from ``c`` to ``c + e_a``, ``loads[a, 1][c]`` the link from ``c + e_a`` back to
    ``c`` (zero where ``c[a]`` is the last coordinate, unless axis ``a`` wraps: then
    ``c + e_a`` is coordinate 0). With ``wrap[a]`` (a ring along axis ``a``) a leg goes
    the shorter way round, upward on a tie. Each flow adds one interval per axis (two
    where it crosses the wraparound) to a difference array, so the cost is linear in
    flows plus links.

    >>> l = xy_link_loads(Mesh([3]), np.array([0]), np.array([2]), np.array([5]))
    >>> l[0, 0].tolist(), l[0, 1].tolist()
    ([5, 5, 0], [0, 0, 0])
    >>> l = xy_link_loads(Mesh([3]), np.array([0]), np.array([2]), np.array([5]), wrap=(True,))
    >>> l[0, 0].tolist(), l[0, 1].tolist()   # 0 -> 2 the short way: the link 0 -> 2
    ([0, 0, 0], [0, 0, 5])
    """
    shape = mesh.shape
    loads = np.zeros((mesh.ndim, 2) + shape, dtype=np.int64)
    if not len(src) or not mesh.ndim:
        return loads
    wraps = _wrap(mesh, wrap)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    strides = np.cumprod((1,) + shape[::-1])[:-1][::-1].astype(np.int64)
    w = np.asarray(nbytes, dtype=np.float64)  # bincount weights; exact below 2**53
    for a in range(mesh.ndim):
        n = shape[a]
        stride, block = int(strides[a]), int(strides[a]) * n
        # The axis-a leg runs at the receiver's coordinates on earlier axes and the
        # sender's on later ones: ``base`` is that linear index with axis a at 0.
        base = (dst // block) * block + src % stride
        s_a, d_a = (src // stride) % n, (dst // stride) % n
        up = (d_a - s_a) % n if wraps[a] else np.where(d_a > s_a, d_a - s_a, 0)
        down = (s_a - d_a) % n if wraps[a] else np.where(d_a < s_a, s_a - d_a, 0)
        go_up = (up > 0) & ((up <= down) | (down == 0))
        go_down = (down > 0) & ~go_up
        # link indices: upward links s_a .. s_a + up - 1, downward d_a .. d_a + down - 1
        # (link c joins c and c + 1), both mod n on a ring
        for direction, sel, first, length in ((0, go_up, s_a, up), (1, go_down, d_a, down)):
            if not sel.any():
                continue
            lo, ln, b, wt = first[sel], length[sel], base[sel], w[sel]
            hi = lo + ln
            over = np.maximum(hi - n, 0)  # the part past the wraparound starts at 0
            hi = np.minimum(hi, n)
            diff = np.zeros(mesh.size, dtype=np.float64)
            for l0, l1, keep in ((lo, hi, np.ones(len(lo), bool)), (0 * lo, over, over > 0)):
                end = keep & (l1 < n)  # an interval up to the axis's end closes itself
                diff += np.bincount(l0[keep] * stride + b[keep], weights=wt[keep],
                                    minlength=mesh.size)
                diff -= np.bincount(l1[end] * stride + b[end], weights=wt[end],
                                    minlength=mesh.size)
            diff = diff.reshape(shape)
            loads[a, direction] = np.rint(np.cumsum(diff, axis=a))
    return loads


def exchange_time(max_link_bytes: float, max_hops: float, *, link_bandwidth: float,
                  hop_latency: float, messages: float = 0, message_overhead: float = 0.0,
                  sent_bytes: float = 0, injection_bandwidth: float | None = None,
                  barrier: float = 0.0) -> float:
    """THE NoC time of one exchange (every estimate of the package uses it: the traffic
    report's ``Superstep.time`` and the performance model's exchanges)::

        t = max(max_link_bytes / link_bandwidth,      # the busiest link streams
                sent_bytes / injection_bandwidth,     # the busiest sender's port
                messages * message_overhead)          # the busiest sender issues
            + max_hops * hop_latency + barrier        # the longest route, one sync

    The three streaming terms overlap (a core issues its next message while the last
    one is on the wire); ``barrier`` is the fixed cost of knowing the exchange is done
    (the writes acknowledged, a flag set at the receiver). ``injection_bandwidth``
    defaults to ``link_bandwidth``.

    >>> exchange_time(3200, 2, link_bandwidth=32e9, hop_latency=1e-9)
    1.02e-07
    >>> round(exchange_time(0, 1, link_bandwidth=32e9, hop_latency=9e-9, messages=7,
    ...                     message_overhead=22e-9, barrier=263e-9) * 1e9, 3)
    426.0
    """
    inject = link_bandwidth if injection_bandwidth is None else injection_bandwidth
    return max(max_link_bytes / link_bandwidth, sent_bytes / inject,
               messages * message_overhead) + max_hops * hop_latency + barrier


class _FlowMetrics:
    """Link metrics shared by both flow representations (needs ``_link_loads``);
    computed once per mesh and remembered (flows are immutable)."""

    def _memo(self, key, fn):
        memo = self.__dict__.setdefault("_memo_store", {})
        if key not in memo:
            memo[key] = fn()
        return memo[key]

    def link_loads(self, mesh: Mesh) -> np.ndarray:
        """Bytes per directed link under XY routing: ``(ndim, 2, *mesh.shape)``, as
        :func:`xy_link_loads` (read-only)."""
        def compute():
            loads = self._link_loads(mesh)
            loads.flags.writeable = False
            return loads
        return self._memo(("loads", mesh), compute)

    def link_bytes(self, mesh: Mesh) -> int:
        """Bytes times links crossed (XY routing)."""
        return self._memo(("link_bytes", mesh), lambda: int(self.link_loads(mesh).sum()))

    def max_link_bytes(self, mesh: Mesh) -> int:
        """Load of the busiest directed link (XY routing)."""
        def compute():
            loads = self.link_loads(mesh)
            return int(loads.max()) if loads.size else 0
        return self._memo(("max_link", mesh), compute)


@dataclass(frozen=True, eq=False)
class Flows(_FlowMetrics):
    """Point-to-point flows of one step: arrays ``src``, ``dst``, ``nbytes`` (int64)."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray

    def __post_init__(self) -> None:
        for a in (self.src, self.dst, self.nbytes):
            a.flags.writeable = False  # flows are values (plans compare them)

    @classmethod
    def empty(cls) -> "Flows":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z)

    def __len__(self) -> int:
        return len(self.src)

    def total(self) -> int:
        """Bytes received by all devices."""
        return int(self.nbytes.sum())

    def received(self, mesh: Mesh) -> np.ndarray:
        """Bytes received per device (linear order)."""
        return np.bincount(self.dst, weights=self.nbytes, minlength=mesh.size).astype(np.int64)

    def _link_loads(self, mesh: Mesh) -> np.ndarray:
        return xy_link_loads(mesh, self.src, self.dst, self.nbytes)

    def _pair_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct ``src << 32 | dst`` keys (sorted) and their byte sums."""
        def compute():
            key = self.src * (1 << 32) + self.dst
            order = np.argsort(key, kind="stable")
            k = key[order]
            start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else \
                np.zeros(0, dtype=np.int64)
            sums = np.add.reduceat(self.nbytes[order], start) if len(k) else k
            return k[start], sums.astype(np.int64)
        return self._memo("pairs", compute)

    def as_pairs(self) -> "Flows":
        return self

    def pairs(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """``(src, dst, bytes)`` summed per device pair, largest first (the first
        ``limit`` only, when given)."""
        if not len(self.src):
            return []
        uniq, sums = self._pair_sums()
        if limit is not None and limit < len(sums):
            top = np.argpartition(-sums, limit)[:limit]
            order = top[np.lexsort((uniq[top], -sums[top]))]
        else:
            order = np.lexsort((uniq, -sums))
        return [(int(uniq[i] >> 32), int(uniq[i] & 0xFFFFFFFF), int(sums[i])) for i in order]

    def num_pairs(self) -> int:
        """Distinct (sender, receiver) pairs."""
        return len(self._pair_sums()[0])


@dataclass(frozen=True, eq=False)
class GroupFlows(_FlowMetrics):
    """A collective's flows in closed form: in each group (row of ``groups``, devices in
    in-group order, the group spanning mesh axes ``axes``) member ``i`` sends member
    ``j != i`` ``send[g, i] + recv[g, j] + u[g, i] * w[g, j]`` bytes.

    >>> f = GroupFlows((0,), np.array([[0, 1, 2]]), send=np.array([[4, 4, 4]]))
    >>> f.total(), f.received(Mesh([3])).tolist(), f.max_link_bytes(Mesh([3]))
    (24, [8, 8, 8], 8)
    """

    axes: tuple[int, ...]
    groups: np.ndarray
    send: np.ndarray | None = None
    recv: np.ndarray | None = None
    u: np.ndarray | None = None
    w: np.ndarray | None = None

    def __post_init__(self) -> None:
        for a in (self.groups, self.send, self.recv, self.u, self.w):
            if a is not None:
                a.flags.writeable = False  # flows are values (plans compare them)

    def _terms(self):
        z = np.zeros(self.groups.shape, dtype=np.int64)
        pick = lambda a: z if a is None else np.asarray(a, dtype=np.int64)  # noqa: E731
        return pick(self.send), pick(self.recv), pick(self.u), pick(self.w)

    @property
    def k(self) -> int:
        return self.groups.shape[1]

    def total(self) -> int:
        """Bytes received by all devices."""
        k = self.k
        if k < 2:
            return 0
        out = 0
        for a in (self.send, self.recv):
            if a is not None:
                out += (k - 1) * int(a.sum())
        if self.u is not None and self.w is not None:
            u, w = self.u, self.w
            out += int((u.sum(1) * w.sum(1)).sum() - (u * w).sum())
        return out

    def received(self, mesh: Mesh) -> np.ndarray:
        """Bytes received per device (linear order)."""
        out = np.zeros(mesh.size, dtype=np.int64)
        if self.k < 2:
            return out
        s, r, u, w = self._terms()
        got = (s.sum(1, keepdims=True) - s) + (self.k - 1) * r + w * (u.sum(1, keepdims=True) - u)
        out[self.groups] = got
        return out

    def _link_loads(self, mesh: Mesh) -> np.ndarray:
        """Bytes per directed link under XY routing, from prefix sums (see module doc).

        A link along group axis ``a`` at coordinate ``p -> p + 1`` carries the flows
        whose sender has ``i[a] <= p`` and already sits on the link's coordinates for
        the later axes, and whose receiver has ``j[a] > p`` and the link's coordinates
        on the earlier axes: both sets are boxes, so the load is a product of sums.
        """
        loads = np.zeros((mesh.ndim, 2) + mesh.shape, dtype=np.int64)
        if self.k < 2:
            return loads
        terms = self._terms()
        per_dev = []
        for t in terms + (np.ones(self.groups.shape, dtype=np.int64),):
            d = np.zeros(mesh.size, dtype=np.int64)
            d[self.groups] = t
            per_dev.append(d.reshape(mesh.shape))
        s, r, u, w, one = per_dev
        group_axes = sorted(self.axes)
        for a in group_axes:
            if mesh.shape[a] < 2:
                continue
            before = tuple(b for b in group_axes if b < a)
            after = tuple(b for b in group_axes if b > a)

            def part(x, axes, upto):
                # Sums over ``axes``, then along ``a``: coordinates <= p (``upto``)
                # or > p.
                x = x.sum(axis=axes, keepdims=True) if axes else x
                c = np.cumsum(x, axis=a)
                return c if upto else c[tuple(_last(a, x.ndim))] - c

            # upward (p -> p + 1): senders at i[a] <= p, receivers at j[a] > p;
            # downward (p + 1 -> p): senders at i[a] > p, receivers at j[a] <= p.
            for direction, upward in ((0, True), (1, False)):
                si = lambda x: part(x, before, upward)  # noqa: E731
                rj = lambda x: part(x, after, not upward)  # noqa: E731
                load = si(s) * rj(one) + si(one) * rj(r) + si(u) * rj(w)
                loads[a, direction] = np.broadcast_to(load, mesh.shape)
            idx = [slice(None)] * mesh.ndim
            idx[a] = -1
            loads[(a, slice(None)) + tuple(idx)] = 0
        return loads

    def as_pairs(self) -> Flows:
        """Every flow listed (``G * k * (k - 1)`` rows: for small meshes only)."""
        return self._pairs

    @cached_property
    def _pairs(self) -> Flows:
        G, k = self.groups.shape
        if k < 2:
            return Flows.empty()
        s, r, u, w = self._terms()
        nb = s[:, :, None] + r[:, None, :] + u[:, :, None] * w[:, None, :]
        src = np.repeat(self.groups[:, :, None], k, axis=2)
        dst = np.repeat(self.groups[:, None, :], k, axis=1)
        keep = ~np.eye(k, dtype=bool)[None] & (nb > 0)
        return Flows(src[keep].astype(np.int64), dst[keep].astype(np.int64),
                     nb[keep].astype(np.int64))

    def num_pairs(self) -> int:
        """Distinct (sender, receiver) pairs that exchange bytes, counted without listing
        them: a pair is silent when ``send[i] = recv[j] = 0`` and ``u[i] * w[j] = 0``."""
        if self.k < 2:
            return 0
        s, r, u, w = self._terms()
        a, b = s == 0, r == 0
        au, bw = a & (u != 0), b & (w != 0)  # silent only if the product term is 0
        silent = a.sum(1) * b.sum(1) - au.sum(1) * bw.sum(1)
        silent -= (a & b).sum(1) - (au & bw).sum(1)  # i == j is no pair
        return int(self.groups.shape[0] * self.k * (self.k - 1) - silent.sum())

    def pairs(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """As :meth:`Flows.pairs` (lists the flows: small meshes only)."""
        return self.as_pairs().pairs(limit)


def _last(a: int, ndim: int) -> list:
    """Index of the last entry along axis ``a``, keeping the axis."""
    idx: list = [slice(None)] * ndim
    idx[a] = slice(-1, None)
    return idx
