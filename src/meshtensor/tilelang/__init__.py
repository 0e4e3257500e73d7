"""The TileLang layer: mesh kernels written with stock TileLang, checked, lowered and run.

Laid out as TileLang itself is; imports run one way, down this list:

- ``ir``: the typed model every pass shares: comm-op records (``ir.comm_op``), the
  launch (``ir.launch``), the one expression evaluator (``ir.evaluate``), statements
  with their scope (``ir.scope``), per-buffer metadata (``ir.metadata``), the kernel
  resolver (``ir.resolve``) and the resolved kernel (``ir.kernel``);
- ``language``: what a kernel author writes: the seed's ``mesh_tensor_functions``
  (``language.mesh_tensor``), the comm ops ``mesh_comm`` (``language.comm``) and
  Tilelang-Mesh's names (``language.tilelang_mesh``, imported as
  ``from meshtensor.tilelang import tilelang_mesh as tm``);
- ``analysis``: ``VerifyMeshTensors``, ``AnalyzeMeshCommunication`` and the
  performance model (``estimate_mesh_kernel``, its timeline);
- ``transform``: ``LowerMeshComm``, ``SpmdizeMeshCopies``, ``PrepareTilelangMesh`` and
  ``LowerDist`` (``T.dist`` kernels);
- ``runtime``: what runs ``T.dist`` kernels' ranks (``DistKernel``) and counts their
  chip-to-chip traffic;
- ``engine``: ``compile_mesh_kernel`` and ``mesh_pipeline``, the one ordered list of
  the passes, with their options in ``pass_config`` (``MeshPassConfig``);
- ``kernels``: GEMMs built on all of the above; ``demos``: the CLI's demos.

Importing this package imports tilelang.
"""

import tilelang  # noqa: F401  (first: it puts its bundled tvm on the path)

from .analysis.flows import comm_flows
from .analysis.perf import (KernelWork, PerfReport, StepTime, StepWork, count_mesh_kernel,
                            estimate_mesh_kernel)
from .analysis.timeline import save_gantt_png, trace_events, write_trace
from .analysis.traffic import (AnalyzeMeshCommunication, CommReport, Superstep,
                               analyze_mesh_communication)
from .analysis.verify import MeshCopyIssue, VerifyMeshTensors, verify_mesh_tensors
from .engine import (MeshKernel, SizedMeshKernel, compile_mesh_kernel, guard_stock_compile,
                     mesh_pipeline)
from .ir.comm_op import COMM_OPS, CommOp, find_comm_ops
from .ir.metadata import ATTR_KEY, MeshTensorEntry, read_mesh_tensor_info
from .ir.scope import CopyCall, CopyRegion, find_copies
from .language import tilelang_mesh
from .language.comm import MeshComm, mesh_comm
from .language.mesh_tensor import get_target_mesh_shape, mesh_tensor_functions
from .logs import install_error_filter, quiet_tilelang
from .pass_config import MeshPassConfig
from .transform.lower_comm import LowerMeshComm, check_collective_rule, lower_mesh_comm
from .transform.spmdize import CopyPlan, SpmdizeMeshCopies, plan_mesh_copies, spmdize
from .transform.tilelang_mesh import PrepareTilelangMesh, prepare_tilelang_mesh
from .transform.lower_dist import DistProgram, LowerDist, lower_dist
from .runtime.dist_kernel import DistKernel
from .runtime.dist_rank import DistDeadlockError, DistRaceError, DistRuntimeError
from .runtime.dist_traffic import DistTraffic, analyze_dist_communication

install_error_filter()
guard_stock_compile()

__all__ = ["mesh_tensor_functions", "get_target_mesh_shape", "read_mesh_tensor_info",
           "MeshTensorEntry", "ATTR_KEY", "find_copies", "CopyCall", "CopyRegion",
           "mesh_comm", "MeshComm", "CommOp", "find_comm_ops", "comm_flows", "COMM_OPS",
           "LowerMeshComm", "lower_mesh_comm", "check_collective_rule",
           "compile_mesh_kernel", "MeshKernel", "SizedMeshKernel", "VerifyMeshTensors",
           "verify_mesh_tensors",
           "MeshCopyIssue", "AnalyzeMeshCommunication", "analyze_mesh_communication",
           "CommReport", "Superstep", "quiet_tilelang", "SpmdizeMeshCopies", "spmdize",
           "plan_mesh_copies", "CopyPlan", "count_mesh_kernel", "estimate_mesh_kernel",
           "KernelWork", "StepWork", "PerfReport", "StepTime", "trace_events", "write_trace",
           "save_gantt_png", "tilelang_mesh", "PrepareTilelangMesh", "prepare_tilelang_mesh",
           "MeshPassConfig", "mesh_pipeline",
           "LowerDist", "lower_dist", "DistProgram", "DistKernel", "DistDeadlockError",
           "DistRaceError", "DistRuntimeError", "DistTraffic", "analyze_dist_communication"]
