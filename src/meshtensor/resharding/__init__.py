"""Resharding: turn any sharding into any other at the minimum data movement.

``plan_reshard`` is pure: it returns a :class:`ReshardPlan` whose ``steps`` are data
(:class:`Step` records: collective steps and point-to-point transfer sets). ``reshard``
executes a plan on the NumPy simulator; ``meshtensor.dist`` executes the same steps
with torch.distributed.

The package, by concept (imports run down this list):

- :mod:`.flows`: who sends how many bytes to whom in each kind of step, from
  per-device boxes (closed forms for collectives, rows for transfers);
- :mod:`.steps`: the one step model (:class:`Step`, its kinds :class:`CollectiveStep`
  and :class:`TransferStep`; flows and rows built on first use);
- :mod:`.printer`: a plan in words (``explain``) and as MLIR (``plan_to_mlir``);
- :mod:`.plan`: :class:`ReshardPlan`, a plan as an immutable value;
- :mod:`.planner`: the general planner (any pair; how a plan is chosen);
- :mod:`.even`: its closed-form fast path for even layouts on small meshes;
- :mod:`.cache`: :func:`plan_reshard`, the entry point, and its bounded cache;
- :mod:`.execute`: ``reshard`` and ``apply_step`` on the NumPy simulator.

>>> from meshtensor import Mesh, Sharding
>>> m = Mesh([2, 2])
>>> plan = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, []), (4, 4))
>>> [(s.op, s.mesh_axes) for s in plan.steps], plan.bytes_moved == plan.lower_bound_bytes
([('all_gather', (1,)), ('all_gather', (0,))], True)
"""

from .cache import PLAN_CACHE_BYTES, PLAN_CACHE_SIZE, plan_reshard
from .even import EVEN_PLAN_MAX_DEVICES
from .execute import apply_step, new_local_shape, own_cells, reshard
from .plan import ReshardPlan
from .printer import EXPLAIN_ALL_PAIRS_UP_TO, plan_to_mlir
from .steps import CollectiveStep, Move, Step, Transfer, TransferStep, transfer_step

__all__ = ["plan_reshard", "reshard", "apply_step", "ReshardPlan", "Step", "Move",
           "CollectiveStep", "TransferStep", "Transfer", "transfer_step", "own_cells",
           "new_local_shape", "plan_to_mlir", "PLAN_CACHE_SIZE", "PLAN_CACHE_BYTES",
           "EVEN_PLAN_MAX_DEVICES", "EXPLAIN_ALL_PAIRS_UP_TO"]
