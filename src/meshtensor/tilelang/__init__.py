"""The TileLang front end: the seed's mesh-tensor helpers, TIR passes that read their
metadata, and the copy decoder they share. Importing this module imports tilelang."""

import tilelang  # noqa: F401  (first: it puts its bundled tvm on the path)

from .copies import CopyCall, CopyRegion, find_copies
from .frontend import (ATTR_KEY, MeshTensorEntry, get_target_mesh_shape,
                       mesh_tensor_functions, read_mesh_tensor_info)

__all__ = ["mesh_tensor_functions", "get_target_mesh_shape", "read_mesh_tensor_info",
           "MeshTensorEntry", "ATTR_KEY", "find_copies", "CopyCall", "CopyRegion"]
