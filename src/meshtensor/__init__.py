"""meshtensor: distributed tensors over a mesh of cores or devices.

The core layer (this package) is pure Python + NumPy; ``meshtensor.tilelang`` (the
TileLang front end) and ``meshtensor.dist`` (torch.distributed execution) are imported
on demand, so ``import meshtensor`` never imports tilelang, tvm or torch.

Example:
    >>> import numpy as np, meshtensor as mt
    >>> mesh = mt.Mesh({"x": 2, "y": 2})
    >>> a = mt.distribute(np.arange(16).reshape(4, 4), mt.Sharding(mesh, [["x"], ["y"]]))
    >>> a.local((1, 0)).tolist()
    [[8, 9], [12, 13]]
"""

from . import collectives, interop
from .machines import Machine, get_machine, load_machine, machine_names
from .mesh import TARGETS, Mesh, default_axis_names
from .mesh_array import MeshArray, distribute
from .resharding import (CollectiveStep, Move, ReshardPlan, Step, Transfer, TransferStep,
                         apply_step, plan_reshard, reshard)
from .reduction import REDUCTION_KINDS, REDUCTIONS, Reduction
from .sharding import Sharding, chunk_bounds
from .visualize import save_plan_png, save_png, visualize, visualize_plan

__version__ = "0.1.0"

__all__ = [
    "Mesh", "Sharding", "MeshArray", "distribute", "collectives", "interop", "chunk_bounds",
    "default_axis_names", "TARGETS", "REDUCTION_KINDS", "REDUCTIONS", "Reduction",
    "plan_reshard", "reshard", "apply_step", "ReshardPlan", "Step", "Move", "CollectiveStep",
    "TransferStep", "Transfer", "visualize", "visualize_plan", "save_png", "save_plan_png",
    "Machine", "get_machine", "load_machine", "machine_names",
]
