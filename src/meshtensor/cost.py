"""The cost model: what a plan step moves, and over how many links.

Assumptions (the planner only compares these numbers):

- Every step is a set of *flows*: ``nbytes`` sent directly from one device to another.
  ``bytes`` counts what devices receive from other devices; a device's own data never
  counts.
- Collectives use the direct (one-shot) algorithms: all_gather, all_to_all and
  reduce_scatter send each piece straight to the device that needs it; all_reduce is a
  reduce_scatter followed by an all_gather (the bandwidth-optimal schedule: each device
  receives ``2 * (B - B/k)`` of its ``B`` bytes in a group of ``k``), its pieces cut
  ceil-div over the flattened local array.
- Links: a mesh connects each device to its row and column neighbours (no
  wraparound). Traffic follows dimension-ordered (XY) routing, so a flow crosses
  ``hops = sum |a_i - b_i|`` links (the Manhattan distance of the coordinates) and
  ``link_bytes = nbytes * hops``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mesh import Mesh


def hops(mesh: Mesh, src: np.ndarray | int, dst: np.ndarray | int) -> np.ndarray:
    """Links crossed from ``src`` to ``dst`` (linear indices) under XY routing.

    >>> hops(Mesh([4, 4]), 0, 15).item()
    6
    """
    c = mesh.coords
    return np.abs(c[np.asarray(src)] - c[np.asarray(dst)]).sum(axis=-1)


@dataclass(frozen=True, eq=False)
class Flows:
    """Point-to-point flows of one step: arrays ``src``, ``dst``, ``nbytes`` (int64)."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray

    @classmethod
    def empty(cls) -> "Flows":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z)

    @classmethod
    def concat(cls, parts: list["Flows"]) -> "Flows":
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)
                     for f in ("src", "dst", "nbytes")))

    def total(self) -> int:
        """Bytes received by all devices."""
        return int(self.nbytes.sum())

    def link_bytes(self, mesh: Mesh) -> int:
        """Bytes times links crossed (XY routing)."""
        if not len(self.src):
            return 0
        return int((self.nbytes * hops(mesh, self.src, self.dst)).sum())

    def received(self, mesh: Mesh) -> np.ndarray:
        """Bytes received per device (linear order)."""
        return np.bincount(self.dst, weights=self.nbytes, minlength=mesh.size).astype(np.int64)

    def pairs(self) -> list[tuple[int, int, int]]:
        """``(src, dst, bytes)`` summed per device pair, largest first."""
        if not len(self.src):
            return []
        key = self.src * (1 << 32) + self.dst
        uniq, inv = np.unique(key, return_inverse=True)
        sums = np.bincount(inv, weights=self.nbytes).astype(np.int64)
        order = np.argsort(-sums, kind="stable")
        return [(int(uniq[i] >> 32), int(uniq[i] & 0xFFFFFFFF), int(sums[i])) for i in order]


def group_exchange(groups: np.ndarray, piece_bytes: np.ndarray) -> Flows:
    """Flows where every member ``i`` of each group sends ``piece_bytes[g, i, j]`` to member
    ``j`` (``i != j``); ``groups`` is ``(G, k)`` device ids, ``piece_bytes`` ``(G, k, k)``."""
    G, k = groups.shape
    if k < 2:
        return Flows.empty()
    src = np.repeat(groups[:, :, None], k, axis=2)
    dst = np.repeat(groups[:, None, :], k, axis=1)
    off = ~np.eye(k, dtype=bool)[None].repeat(G, axis=0)
    keep = off & (piece_bytes > 0)
    return Flows(src[keep].astype(np.int64), dst[keep].astype(np.int64),
                 piece_bytes[keep].astype(np.int64))
