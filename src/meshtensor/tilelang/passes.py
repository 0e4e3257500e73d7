"""Old path of the two passes that read the metadata, before the package was laid out
in layers: ``VerifyMeshTensors`` now lives in :mod:`.analysis.verify` and
``AnalyzeMeshCommunication`` in :mod:`.analysis.traffic`; the names below are theirs.
"""

from .analysis.traffic import (AnalyzeMeshCommunication, CommReport, Superstep,
                               analyze_mesh_communication)
from .analysis.verify import MeshCopyIssue, VerifyMeshTensors, verify_mesh_tensors

__all__ = ["VerifyMeshTensors", "verify_mesh_tensors", "MeshCopyIssue",
           "AnalyzeMeshCommunication", "analyze_mesh_communication", "CommReport",
           "Superstep"]
