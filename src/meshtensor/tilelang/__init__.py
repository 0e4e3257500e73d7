"""The TileLang front end: the seed's mesh-tensor helpers, comm ops between cores, TIR
passes that read their metadata, and the copy decoder they share. Importing this module
imports tilelang."""

import tilelang  # noqa: F401  (first: it puts its bundled tvm on the path)

from .comm import COMM_OPS, CommOp, comm_flows, find_comm_ops, mesh_comm
from .copies import CopyCall, CopyRegion, find_copies
from .frontend import (ATTR_KEY, MeshTensorEntry, get_target_mesh_shape,
                       mesh_tensor_functions, read_mesh_tensor_info)
from .logs import quiet_tilelang
from .lower import LowerMeshComm, MeshKernel, compile_mesh_kernel
from .passes import (AnalyzeMeshCommunication, CommReport, Superstep, VerifyMeshTensors,
                     analyze_mesh_communication, verify_mesh_tensors)
from .spmdize import CopyPlan, SpmdizeMeshCopies, plan_mesh_copies, spmdize

__all__ = ["mesh_tensor_functions", "get_target_mesh_shape", "read_mesh_tensor_info",
           "MeshTensorEntry", "ATTR_KEY", "find_copies", "CopyCall", "CopyRegion",
           "mesh_comm", "CommOp", "find_comm_ops", "comm_flows", "COMM_OPS",
           "LowerMeshComm", "compile_mesh_kernel", "MeshKernel",
           "VerifyMeshTensors", "verify_mesh_tensors", "AnalyzeMeshCommunication",
           "analyze_mesh_communication", "CommReport", "Superstep", "quiet_tilelang",
           "SpmdizeMeshCopies", "spmdize", "plan_mesh_copies", "CopyPlan"]
