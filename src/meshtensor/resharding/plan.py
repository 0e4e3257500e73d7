"""``ReshardPlan``: a plan as an immutable value (its layouts, shape, itemsize, steps
and lower bound) and the numbers read from it (bytes moved, link loads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..mesh import Mesh
from ..sharding import Sharding
from ..text import DEFAULT_WIDTH
from .printer import explain, plan_to_mlir
from .steps import Step


@dataclass(frozen=True, eq=False)
class ReshardPlan:
    """A plan from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    ``steps`` are the planner's decisions (:class:`~meshtensor.resharding.Step`: op,
    axes, layouts, bytes); their flows and transfer rows are built when first read
    (the planner decides in closed form and builds only what a caller uses).
    ``bytes_moved`` counts bytes received by devices from other devices;
    ``lower_bound_bytes`` the in-tensor cells of each target local array that its source
    local array did not hold; ``link_bytes`` bytes times links crossed (XY routing);
    ``max_link_bytes`` the busiest link's load, summed over steps (steps run one after
    another); ``max_device_bytes`` the bytes received by the busiest device.

    A plan is an immutable value: equal content compares and hashes equal, so plans can
    be cached, compared and used as dict keys.
    """

    src: Sharding
    tgt: Sharding
    global_shape: tuple[int, ...]
    itemsize: int
    steps: tuple[Step, ...]
    lower_bound_bytes: int

    @property
    def moves(self) -> tuple[Step, ...]:
        """The steps (the old name of the planner's decisions, which are now the steps)."""
        return self.steps

    def _key(self) -> tuple:
        return (self.src, self.tgt, self.global_shape, self.itemsize, self.steps,
                self.lower_bound_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReshardPlan):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def mesh(self) -> Mesh:
        return self.src.mesh

    @property
    def bytes_moved(self) -> int:
        return sum(s.bytes for s in self.steps)

    @property
    def link_bytes(self) -> int:
        return int(sum(s.flows.link_bytes(self.mesh) for s in self.steps))

    @property
    def max_link_bytes(self) -> int:
        return int(sum(s.flows.max_link_bytes(self.mesh) for s in self.steps))

    @property
    def max_device_bytes(self) -> int:
        if not self.steps:
            return 0
        return int(sum(s.flows.received(self.mesh) for s in self.steps).max())

    def explain(self, max_pairs: int = 12, *, width: int = DEFAULT_WIDTH) -> str:
        """A readable state chain: each step, which devices talk and how many bytes.

        Meshes of more than ``EXPLAIN_ALL_PAIRS_UP_TO`` devices get a summary per step
        (groups, pairs, busiest device and link) and at most ``max_pairs`` of the
        largest transfers, so the text stays short on thousands of devices. Lines fit
        ``width`` columns (default 80): long ones continue on an indented line.

        >>> from meshtensor import Mesh, Sharding, plan_reshard
        >>> m = Mesh([2])
        >>> print(plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,)).explain())
        reshard S(x) -> R on mesh 2 ('x',), shape (4,), 4 B/element
          step 1  all_gather(mesh_axes=['x'], gather_axis=0)
                  S(x) -> R   bytes 16   link bytes 16   busiest link 8
                  (0,) -> (1,)   8 B
                  (1,) -> (0,)   8 B
          total: bytes_moved 16, lower bound 16 (ratio 1.00), max_link_bytes 8
                 link bytes 16, busiest device receives 8
        """
        return explain(self, max_pairs, width=width)

    def __str__(self) -> str:
        return self.explain()

    def to_mlir(self, mesh_name: str = "mesh", element_type: str | None = None) -> str:
        """The plan's collectives as MLIR ``shard`` dialect ops (point-to-point transfer
        steps as a comment); see :func:`meshtensor.resharding.plan_to_mlir`.

        >>> from meshtensor import Mesh, Sharding, plan_reshard
        >>> m = Mesh([2])
        >>> p = plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,))
        >>> print(p.to_mlir().splitlines()[-1])
        %1 = shard.all_gather %0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
        """
        return plan_to_mlir(self, mesh_name, element_type)

    def __repr__(self) -> str:
        ops = [s.op for s in self.steps]
        return (f"ReshardPlan({self.src} -> {self.tgt}, shape={self.global_shape}, "
                f"itemsize={self.itemsize}, steps={ops}, bytes_moved={self.bytes_moved}, "
                f"lower_bound_bytes={self.lower_bound_bytes})")


def new_plan(src: Sharding, tgt: Sharding, shape: tuple[int, ...], itemsize: int,
             steps: tuple[Step, ...], lb: int) -> ReshardPlan:
    """``ReshardPlan(...)`` without the frozen dataclass's six ``object.__setattr__``
    calls (a measurable share of planning a small mesh)."""
    plan = object.__new__(ReshardPlan)
    d: dict[str, Any] = plan.__dict__
    d["src"], d["tgt"], d["global_shape"], d["itemsize"] = src, tgt, shape, itemsize
    d["steps"], d["lower_bound_bytes"] = steps, lb
    return plan
