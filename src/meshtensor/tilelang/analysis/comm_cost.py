"""What one execution of a comm op costs on a machine, by every algorithm the machine
can run it with, and the cheapest.

The traffic report (:mod:`.traffic`) keeps the bytes the kernel asked for: the direct
(one-shot) transfers of every comm op. A chip can move the same data other ways: a
broadcast as one multicast, as a pipelined chain or as a binomial tree; an all-gather,
reduce-scatter or all-reduce as a ring or by recursive halving. Each comm op kind has
ONE cost function in :data:`COLLECTIVE_COSTS`; it lists the algorithms that apply and
their times, and :func:`exchange_cost` picks the cheapest. The table is the ``perf``
backend of the comm-op declarations (:mod:`meshtensor.comm_ops`), keyed by TIR form.

Notation (docs/perf.md, "Collective algorithms"): ``k`` members per group, ``B`` the
bytes of one core's source region, ``P`` the largest piece of a reduce-scatter, ``H``
the longest route of the direct transfers (hops, on the machine's topology), ``h`` the
hops between neighbours of a ring, ``beta`` the link bandwidth, ``beta_i`` the injection
bandwidth, ``beta_m`` the multicast bandwidth, ``o`` and ``o_m`` the per-message and
per-multicast overheads, ``alpha`` the hop latency and ``s`` the barrier latency (paid
once per dependent round: the sender learns its writes landed and sets a flag). A group
of an op is a row, a column or a sub-mesh along mesh axes; the groups of one op use
disjoint links and run side by side.

- ``direct`` (every op): :func:`meshtensor.cost.exchange_time` of the transfers,
  ``max(L / beta, S / beta_i, m o) + H alpha + s`` with ``L`` the busiest link's bytes,
  ``S`` and ``m`` the most bytes and messages one core sends.
- ``multicast`` (broadcast; machines with multicast): ``max(B / beta_m, o_m) + H alpha + s``.
- ``chain`` (broadcast, ``k >= 3``): ``B`` in ``c`` chunks down a chain (a tree of chains
  for a 2-D group) of depth ``H``: ``(H + c - 1)(max(B / (c beta), o) + alpha + s)``,
  ``c`` in 1..64 chosen to minimise it.
- ``tree`` (broadcast, ``k >= 4``): ``ceil(log2 k)`` rounds of ``max(B / beta, o) + s``,
  plus ``alpha`` times the hops of all rounds, ``sum over group axes of (size - 1)``
  (``floor(size / 2)`` on a ring).
- ``ring`` (all_gather: ``k - 1`` rounds of ``B``; reduce_scatter: ``k - 1`` rounds of
  ``P``; all_reduce: ``2(k - 1)`` rounds of ``ceil(B / k)``; ``k >= 3``): each round
  ``max(X / beta, X / beta_i, o) + h alpha + s``. ``h`` is 1 on a ring axis, for
  ``k <= 2``, and on a 2-D group with an even number of cores (a snake cycle); else 2
  (a folded ring: every link still carries one piece per round).
- ``multicast`` (all_gather; machines with multicast): every member multicasts its
  piece, ``max((k - 1) B / beta_m, o_m) + H alpha + s``.
- ``halving`` (reduce_scatter, all_reduce twice: reduce-scatter then all-gather; a 1-D
  group of ``k = 2^q``): round ``r`` sends ``b_r = kP / 2^(r+1)`` to the member
  ``d_r = k / 2^(r+1)`` away, ``d_r`` transfers sharing a link:
  ``sum_r max(d_r b_r / beta, b_r / beta_i, o) + d_r alpha + s``.

Not modelled: the arithmetic of the reductions (the sums a reduce-scatter does), the
port a core shares between two exchanges that run side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from ...cost import exchange_time
from ...machines import Machine

__all__ = ["Exchange", "AlgorithmCost", "COLLECTIVE_COSTS", "exchange_cost", "ring_hops"]

MAX_CHUNKS = 64


@dataclass(frozen=True)
class Exchange:
    """One execution of a comm op as the cost functions see it, on one machine: the op
    kind, the sizes of its groups' axes and whether they wrap, ``piece_bytes`` (one
    core's source region, ``B``), ``max_piece`` (the largest piece a reduce-scatter
    sends, ``P``), and the direct transfers' busiest link, longest route, most bytes
    and most messages one core sends (on the machine's topology)."""

    op: str
    group_dims: tuple[int, ...]
    group_wrap: tuple[bool, ...]
    piece_bytes: int
    max_piece: int
    max_link_bytes: int
    max_hops: int
    max_sent_bytes: int
    max_messages: int
    flows: int

    @property
    def k(self) -> int:
        """Members per group."""
        return int(np.prod(self.group_dims, dtype=np.int64)) if self.group_dims else 1


@dataclass(frozen=True)
class AlgorithmCost:
    """One way to run an exchange: its ``algorithm`` name, ``seconds`` in all, of which
    ``stream`` is the streaming and issuing part (bytes over links and ports, message
    overheads) and the rest latency (hops, barriers); ``rounds`` of dependent steps;
    ``link_bytes`` the bytes its busiest link carries."""

    algorithm: str
    seconds: float
    stream: float
    rounds: int = 1
    link_bytes: float = 0.0

    @property
    def latency(self) -> float:
        return self.seconds - self.stream


def ring_hops(dims: tuple[int, ...], wrap: tuple[bool, ...]) -> int:
    """Hops between neighbours of the best ring through a group.

    >>> ring_hops((4,), (False,)), ring_hops((4,), (True,)), ring_hops((3, 3), (False, False))
    (2, 1, 2)
    >>> ring_hops((4, 4), (False, False)), ring_hops((2,), (False,))
    (1, 1)
    """
    k = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if k <= 2 or any(wrap) or (len([d for d in dims if d > 1]) >= 2 and k % 2 == 0):
        return 1
    return 2


def _direct(ex: Exchange, m: Machine) -> AlgorithmCost:
    if not ex.flows:
        return AlgorithmCost("direct", 0.0, 0.0, 0)
    total = exchange_time(ex.max_link_bytes, ex.max_hops, link_bandwidth=m.link_bandwidth,
                          hop_latency=m.hop_latency, messages=ex.max_messages,
                          message_overhead=m.message_overhead, sent_bytes=ex.max_sent_bytes,
                          injection_bandwidth=m.injection, barrier=m.barrier_latency)
    latency = ex.max_hops * m.hop_latency + m.barrier_latency
    return AlgorithmCost("direct", total, total - latency, 1, ex.max_link_bytes)


def _rounds(name: str, rounds: int, nbytes: float, hops: int, m: Machine,
            on_link: float = 1.0) -> AlgorithmCost:
    """``rounds`` dependent rounds, each moving ``nbytes`` per core (``on_link`` times
    that on the busiest link) ``hops`` far."""
    stream = max(on_link * nbytes / m.link_bandwidth, nbytes / m.injection,
                 m.message_overhead)
    per = stream + hops * m.hop_latency + m.barrier_latency
    return AlgorithmCost(name, rounds * per, rounds * stream, rounds,
                         rounds * on_link * nbytes)


def _multicast(ex: Exchange, m: Machine, pieces: int = 1) -> list[AlgorithmCost]:
    if not m.multicast or not ex.flows:
        return []
    stream = max(pieces * ex.piece_bytes / m.multicast_bandwidth, m.multicast_overhead)
    return [AlgorithmCost("multicast", stream + ex.max_hops * m.hop_latency
                          + m.barrier_latency, stream, 1, pieces * ex.piece_bytes)]


def _chain(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    if ex.k < 3 or not ex.flows:
        return []
    d, B = ex.max_hops, ex.piece_bytes
    c = np.arange(1, MAX_CHUNKS + 1)
    stream = np.maximum(B / (c * min(m.link_bandwidth, m.injection)), m.message_overhead)
    t = (d + c - 1) * (stream + m.hop_latency + m.barrier_latency)
    i = int(np.argmin(t))  # the fewest chunks on a tie
    return [AlgorithmCost(f"chain/{i + 1}", float(t[i]), float((d + i) * stream[i]), d + i, B)]


def _tree(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    if ex.k < 4 or not ex.flows:
        return []
    rounds = math.ceil(math.log2(ex.k))
    hops = sum(d // 2 if w else d - 1 for d, w in zip(ex.group_dims, ex.group_wrap))
    stream = max(ex.piece_bytes / m.link_bandwidth, ex.piece_bytes / m.injection,
                 m.message_overhead)
    t = rounds * (stream + m.barrier_latency) + hops * m.hop_latency
    return [AlgorithmCost("tree", t, rounds * stream, rounds, ex.piece_bytes)]


def _ring(ex: Exchange, m: Machine, rounds: int, nbytes: float) -> list[AlgorithmCost]:
    if ex.k < 3 or not ex.flows:
        return []
    return [_rounds("ring", rounds, nbytes, ring_hops(ex.group_dims, ex.group_wrap), m)]


def _halving(ex: Exchange, m: Machine, piece: float, times: int = 1) -> list[AlgorithmCost]:
    k = ex.k
    if len(ex.group_dims) != 1 or k < 4 or k & (k - 1) or not ex.flows:
        return []
    total = stream = on_link = 0.0
    for r in range(int(math.log2(k))):
        d = k >> (r + 1)
        c = _rounds("halving", 1, k * piece / 2 ** (r + 1), d, m, on_link=d)
        total, stream, on_link = total + c.seconds, stream + c.stream, on_link + c.link_bytes
    return [AlgorithmCost("halving", times * total, times * stream,
                          times * int(math.log2(k)), times * on_link)]


def _broadcast(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    return [_direct(ex, m), *_multicast(ex, m), *_chain(ex, m), *_tree(ex, m)]


def _all_gather(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    return [_direct(ex, m), *_ring(ex, m, ex.k - 1, ex.piece_bytes),
            *_multicast(ex, m, pieces=ex.k - 1)]


def _reduce_scatter(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    return [_direct(ex, m), *_ring(ex, m, ex.k - 1, ex.max_piece),
            *_halving(ex, m, ex.max_piece)]


def _all_reduce(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    piece = math.ceil(ex.piece_bytes / max(ex.k, 1))
    return [_direct(ex, m), *_ring(ex, m, 2 * (ex.k - 1), piece),
            *_halving(ex, m, piece, times=2)]


def _barrier(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    return [AlgorithmCost("barrier", m.barrier_latency, 0.0)]


def _direct_only(ex: Exchange, m: Machine) -> list[AlgorithmCost]:
    return [_direct(ex, m)]


#: One cost function per comm op kind: the algorithms that can run it on a machine.
#: the ``perf`` backend of every comm op's forms (meshtensor.comm_ops)
COLLECTIVE_COSTS: Mapping[str, Callable[[Exchange, Machine], list[AlgorithmCost]]] = {
    "broadcast": _broadcast,
    "all_gather": _all_gather,
    "reduce_scatter": _reduce_scatter,
    "all_reduce": _all_reduce,
    "all_to_all": _direct_only,
    "shift": _direct_only,
    "permute": _direct_only,
    "barrier": _barrier,
    # Tilelang-Mesh's ops: their phases already are what the chip moves
    "tm_broadcast": _direct_only,
    "tm_put": _direct_only,
    "tm_all_gather": _direct_only,
    "tm_all_reduce": _direct_only,
}


def exchange_cost(ex: Exchange, machine: Machine) -> tuple[AlgorithmCost, ...]:
    """Every algorithm that can run ``ex`` on ``machine``, cheapest first (ties keep the
    table's order: ``direct`` first).

    >>> from meshtensor.machines import get_machine
    >>> ex = Exchange("broadcast", (4,), (False,), 65536, 65536, 3 * 65536, 3, 3 * 65536,
    ...               3, 12)
    >>> [(c.algorithm, round(c.seconds * 1e6, 2)) for c in
    ...  exchange_cost(ex, get_machine("wormhole-n300"))][:2]
    [('multicast', 3.98), ('tree', 4.66)]
    """
    if ex.op not in COLLECTIVE_COSTS:
        raise ValueError(f"exchange_cost: no cost function for comm op {ex.op!r}; ops "
                         f"with one: {', '.join(COLLECTIVE_COSTS)}")
    return _costs(ex, machine)


@lru_cache(maxsize=65536)
def _costs(ex: Exchange, machine: Machine) -> tuple[AlgorithmCost, ...]:
    # a kernel repeats few distinct exchanges many times: cost each once
    out = COLLECTIVE_COSTS[ex.op](ex, machine)
    return tuple(sorted(out, key=lambda c: c.seconds))
