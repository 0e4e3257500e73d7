"""The names a mesh kernel carries in its TIR: function attribute keys and the extern
prefix of comm-op statements. Every pass that writes or reads one imports it from here.

>>> import tilelang
>>> from tvm import tirx
>>> is_comm_call(tirx.call_extern("handle", EXTERN_PREFIX + "barrier"))
True
"""

from __future__ import annotations

from tvm import tirx

__all__ = ["ATTR_KEY", "DIST_RANK_ATTR", "DIST_RT_CALL", "DIST_RETURN_MARK", "EXTERN_PREFIX",
           "is_comm_call"]

#: the function attribute ``annotate_mesh_tensor_info`` writes (per-buffer metadata)
ATTR_KEY = "mesh_tensor_info"
#: set on the per-rank program ``LowerDist`` writes for a ``T.dist`` kernel
DIST_RANK_ATTR = "meshtensor.dist_rank"
#: a rank's call of its runtime (``int32 (int64* args, int32 n)``), one per T.dist op
DIST_RT_CALL = "meshtensor_rt_call"
#: where the runtime's answer to the buffer registration goes
DIST_RETURN_MARK = "meshtensor_marker_register_return"
#: a comm op is ``T.call_extern("handle", EXTERN_PREFIX + op, ...)`` (ir.comm_op)
EXTERN_PREFIX = "meshtensor_comm_"


def is_comm_call(call: tirx.Call) -> bool:
    """Whether ``call`` is a comm op's ``call_extern``."""
    if getattr(call.op, "name", None) != "tirx.call_extern" or not call.args:
        return False
    name = call.args[0]
    return isinstance(name, tirx.StringImm) and name.value.startswith(EXTERN_PREFIX)
