"""The one step model of a reshard plan.

A :class:`Step` is what the planner decides: the op (a collective of
:mod:`meshtensor.collectives`, ``"update_halo"`` or ``"transfers"``), its mesh axes and
parameters, the layouts before and after, the bytes it moves, and the global shape and
itemsize they are counted for. Everything else follows from those and is built on first
use: ``flows`` (who sends how many bytes to whom, :mod:`.flows`) and, for transfers,
the rows (which box each device receives from which). So a plan costs only its
decisions until someone reads its traffic or runs it.

Two kinds share the record: :class:`CollectiveStep` (every op but ``"transfers"``) and
:class:`TransferStep` (point-to-point rows). Steps are immutable values: equal
decisions compare and hash equal (transfer steps also compare their rows).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from ..boxes import box_slices
from ..sharding import Sharding
from .flows import (Rows, StepFlows, best_transfer_rows, rows_flows, step_flows,
                    transfer_rows)


class Transfer(NamedTuple):
    """One point-to-point copy: ``src`` sends the global ``region`` to ``dst``."""

    src: int
    dst: int
    region: tuple[slice, ...]


class _StepFields(NamedTuple):
    op: str
    mesh_axes: tuple[int, ...]
    params: tuple[tuple[str, Any], ...]
    before: Sharding
    after: Sharding
    bytes: int
    global_shape: tuple[int, ...] | None
    itemsize: int


#: The fields of a step, in order (its decision; ``flows`` and rows follow from them).
STEP_FIELDS = _StepFields._fields


class Step(_StepFields):
    """One step of a plan, as decided: ``op``, ``mesh_axes``, ``params``, the layouts
    ``before`` and ``after``, the ``bytes`` it moves, and the ``global_shape`` and
    ``itemsize`` they are counted for. ``flows`` are built when first read. An
    immutable value (a named tuple of the decision: planning makes many, cheaply).

    >>> from meshtensor import Mesh, Sharding, plan_reshard
    >>> m = Mesh([2])
    >>> s = plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,)).steps[0]
    >>> s.op, s.mesh_axes, s.kwargs, s.bytes
    ('all_gather', (0,), {'gather_axis': 0}, 16)
    >>> s.flows.pairs()
    [(0, 1, 8), (1, 0, 8)]
    """

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    __delattr__ = __setattr__  # type: ignore[assignment]

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @cached_property
    def flows(self) -> StepFlows:
        return step_flows(self.op, self.mesh_axes, self.params, self.before, self.after,
                          self.global_shape, self.itemsize)

    def describe(self) -> str:
        names = [self.before.mesh.axis_names[a] for a in self.mesh_axes]
        args = "".join(f", {k}={v!r}" for k, v in self.params)
        return f"{self.op}(mesh_axes={names}{args})"

    def _key(self) -> tuple:
        return tuple(self)

    def __reduce__(self):
        return _step, (type(self), tuple(self))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.describe()}, {self.before} -> {self.after}, "
                f"bytes={self.bytes})")


def _step(cls: type, fields: tuple) -> "Step":
    return tuple.__new__(cls, fields)


class CollectiveStep(Step):
    """A collective of :mod:`meshtensor.collectives` (or ``update_halo``) taking
    ``before`` to ``after``; its flows are closed forms over groups of devices."""


class TransferStep(Step):
    """Point-to-point transfers: row ``i`` sends global box ``[lo[i], hi[i])`` from device
    ``src[i]`` to ``dst[i]``. Cells a device already holds are kept locally. The rows
    are built when first read (the link-aware choice of senders happens then) and are
    read-only; equal steps have equal rows."""

    def __new__(cls, before: Sharding, after: Sharding, bytes: int,  # noqa: A002
                global_shape: tuple[int, ...] | None, itemsize: int,
                rows: Rows | None = None) -> "TransferStep":
        step = tuple.__new__(cls, ("transfers", (), (), before, after, bytes, global_shape,
                                   itemsize))
        if rows is not None:
            step.__dict__["rows"] = rows
        return step

    @cached_property
    def rows(self) -> Rows:
        return best_transfer_rows(self.before, self.after, self.global_shape, self.itemsize)

    @property
    def src(self) -> np.ndarray:
        return self.rows[0]

    @property
    def dst(self) -> np.ndarray:
        return self.rows[1]

    @property
    def lo(self) -> np.ndarray:
        return self.rows[2]

    @property
    def hi(self) -> np.ndarray:
        return self.rows[3]

    @cached_property
    def flows(self) -> StepFlows:
        return rows_flows(self.rows, self.itemsize)

    @property
    def transfers(self) -> list[Transfer]:
        return [Transfer(int(s), int(d), box_slices(l, h))
                for s, d, l, h in zip(self.src, self.dst, self.lo, self.hi)]

    @classmethod
    def local_only(cls, before: Sharding, after: Sharding, rank: int) -> "TransferStep":
        """No transfers: each device re-lays its own cells into its ``after`` array
        (the first half of ``update_halo`` when halo sizes change)."""
        z = np.zeros(0, dtype=np.int64)
        zr = np.zeros((0, rank), dtype=np.int64)
        return cls(before, after, 0, None, 1, (z, z.copy(), zr, zr.copy()))

    def describe(self) -> str:
        if not len(self.src):
            return "local re-layout (no communication)"
        return f"transfers({len(self.src)} point-to-point copies)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple):
            return NotImplemented
        if self is other:
            return True
        if not tuple.__eq__(self, other) or not isinstance(other, TransferStep):
            return False
        return all(np.array_equal(a, b) for a, b in zip(self.rows, other.rows))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__  # type: ignore[assignment]

    def __reduce__(self):
        return _transfer_step, (tuple(self), self.rows)


def _transfer_step(fields: tuple, rows: Rows) -> TransferStep:
    _, _, _, before, after, nbytes, shape, itemsize = fields
    return TransferStep(before, after, nbytes, shape, itemsize, rows)


#: The old name of a planner's decision (before steps and decisions were one record).
Move = Step


def make_step(op: str, mesh_axes: tuple[int, ...], params: tuple[tuple[str, Any], ...],
              before: Sharding, after: Sharding, nbytes: int, shape: tuple[int, ...],
              itemsize: int, flows: StepFlows | None = None) -> Step:
    """A step of either kind; ``flows`` the planner built already are kept."""
    if op == "transfers":
        step: Step = TransferStep(before, after, nbytes, shape, itemsize)
    else:
        step = tuple.__new__(CollectiveStep, (op, mesh_axes, params, before, after, nbytes,
                                              shape, itemsize))
    if flows is not None:
        step.__dict__["flows"] = flows
    return step


def transfer_step(before: Sharding, after: Sharding, shape, itemsize, held=None,
                  spread: bool = False) -> TransferStep:
    """The point-to-point step from ``before`` to ``after``: every device receives the
    in-tensor cells of its ``after`` array that ``held`` (default: what its ``before``
    array holds) does not cover, each from a device whose core has it: the nearest one,
    or with ``spread`` replicas taken in turn. With ``held`` = the core regions and
    ``before == after`` it is ``update_halo``'s traffic.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2])
    >>> transfer_step(Sharding(m, [[0]]), Sharding(m, []), (4,), 4).transfers
    [Transfer(src=0, dst=1, region=(slice(0, 2, None),)), Transfer(src=1, dst=0, region=(slice(2, 4, None),))]
    """
    shape = tuple(shape)
    rows = transfer_rows(before, after, shape, held=held, spread=spread)
    nbytes = int(rows_flows(rows, itemsize).total())
    return TransferStep(before, after, nbytes, shape, itemsize, rows)
