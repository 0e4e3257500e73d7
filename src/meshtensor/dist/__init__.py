"""Execution on a real distributed engine: torch.distributed, one process per device.

``DistMesh`` binds a :class:`meshtensor.Mesh` to the process group (rank = linear device
index) and runs every collective of :mod:`meshtensor.collectives` on the calling rank's
local tensor (torch or NumPy; results come back in the same kind); ``dist_reshard`` executes a :class:`meshtensor.ReshardPlan`; ``run`` starts
one process per device on this machine (or runs under ``torchrun``); ``redistribute``
moves a PyTorch DTensor by meshtensor's plan; ``run_kernel`` runs a ``T.dist`` kernel with
one rank per process. This is the only part of meshtensor that imports torch.
"""

from .dtensor import mesh_of, redistribute
from .engine import DistCollectiveError, DistMesh, dist_reshard, runs_point_to_point
from .kernel import run_kernel
from .launch import DistRunError, init_from_env, local_part, run

__all__ = ["DistMesh", "DistCollectiveError", "dist_reshard", "run", "init_from_env",
           "DistRunError", "local_part", "redistribute", "mesh_of", "runs_point_to_point",
           "run_kernel"]
