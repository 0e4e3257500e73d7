"""Kernel parameters that are distributed tensors (Tilelang-Mesh's ``T.MeshTensor``):
inside the kernel a parameter has one core's shard shape; the caller passes the global
tensor.

:class:`MeshParam` is the typed record of one such parameter (global shape, shard
shape, :class:`meshtensor.Sharding`, dtype, the layout the kernel named). The language
layer registers each parameter buffer it creates (:func:`register`, keyed by the
buffer's data variable, as ``mesh_tensor_info`` keys buffers; entries of kernels that
nothing holds any more are dropped as the registry grows); passes find them with
:func:`mesh_params`. :meth:`MeshParam.scatter` and :meth:`MeshParam.gather` move
between the global tensor and the per-core stack ``(cores, *shard_shape)`` the lowered
kernel takes: cells of a shard past the global edge are zero going in and dropped
coming out, and the copies of a replicated tensor must agree coming out.

>>> import tilelang
>>> from meshtensor import Mesh, Sharding
>>> mesh = Mesh({"row": 2, "col": 2})
>>> p = MeshParam("A", (5, 4), Sharding(mesh, [["row"], ["col"]]), "float32")
>>> p.shard_shape
(3, 2)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import tirx

from ...mesh import Mesh
from ...sharding import Sharding

__all__ = ["MeshParam", "register", "registered", "mesh_params"]


@dataclass(frozen=True)
class MeshParam:
    """One distributed-tensor parameter of a kernel.

    ``name`` is the parameter's name (``""`` until the kernel is parsed),
    ``global_shape`` the caller's tensor, ``sharding`` how it lies on the mesh (ceil
    rule; a replicated axis gives copies), ``dtype`` its element type, ``layout`` a
    text record of the DRAM layout the kernel named (no effect on what a core owns),
    ``policy`` the text of the kernel's sharding policy.
    """

    name: str
    global_shape: tuple[int, ...]
    sharding: Sharding
    dtype: str
    layout: str | None = None
    policy: str = ""

    @property
    def mesh(self) -> Mesh:
        return self.sharding.mesh

    @property
    def shard_shape(self) -> tuple[int, ...]:
        """The per-core shape the kernel sees (every split dim ceil-divided)."""
        return self.sharding.tile_shape(self.global_shape)

    def regions(self) -> tuple[np.ndarray, np.ndarray]:
        """Per core (linear order): the ``[start, stop)`` of its valid part in the global
        tensor, two ``(cores, rank)`` arrays."""
        return self.sharding.regions(self.global_shape)

    def check(self, tensor: Any, position: int) -> None:
        """``ValueError`` unless ``tensor`` is a torch tensor of this global shape and
        dtype (``position``: the argument's index, for the message)."""
        import torch
        what = f"T.MeshTensor parameter {self.name!r} (argument {position})"
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{what}: expected the global torch tensor of shape "
                            f"{self.global_shape}, got {type(tensor).__name__}")
        if tuple(tensor.shape) != self.global_shape:
            raise ValueError(f"{what}: expected the global tensor of shape "
                             f"{self.global_shape} ({self.policy}), got shape "
                             f"{tuple(tensor.shape)}")
        want = _torch_dtype(self.dtype)
        if tensor.dtype != want:
            raise ValueError(f"{what}: expected dtype {self.dtype}, got {tensor.dtype}")

    def scatter(self, tensor: Any) -> Any:
        """The per-core stack ``(cores, *shard_shape)`` of a global torch tensor: core
        ``c`` gets its region, zero past the global edge."""
        import torch
        starts, stops = self.regions()
        out = torch.zeros((self.mesh.size,) + self.shard_shape, dtype=tensor.dtype,
                          device=tensor.device)
        src = tensor.contiguous()
        for c in range(self.mesh.size):
            out[(c,) + _box(starts[c], stops[c], zero=True)] = src[_box(starts[c], stops[c])]
        return out

    def gather(self, stack: Any, tensor: Any) -> None:
        """Write every core's valid region of ``stack`` back into the global ``tensor``
        (cells past the edge are dropped). Replicas must agree: ``ValueError`` naming
        the tensor and the cores whose copies differ."""
        starts, stops = self.regions()
        owner: dict[tuple, int] = {}
        for c in range(self.mesh.size):
            key = tuple(starts[c].tolist()) + tuple(stops[c].tolist())
            piece = stack[(c,) + _box(starts[c], stops[c], zero=True)]
            first = owner.setdefault(key, c)
            if first == c:
                tensor[_box(starts[c], stops[c])] = piece
                continue
            ref = stack[(first,) + _box(starts[c], stops[c], zero=True)]
            same = (piece == ref) | (piece.isnan() & ref.isnan()) if piece.is_floating_point() \
                else piece == ref
            if not bool(same.all()):
                bad = [int(v) for v in (~same).nonzero()[0].tolist()]
                cell = [int(a) + b for a, b in zip(starts[c], bad)]
                raise ValueError(
                    f"T.MeshTensor output {self.name!r} ({self.policy}) is replicated, but "
                    f"the copies of cores {self.mesh.multi_index(first)} and "
                    f"{self.mesh.multi_index(c)} disagree at {int((~same).sum())} of "
                    f"{same.numel()} cells (first at global index {cell}: "
                    f"{ref[tuple(bad)].item()} vs {piece[tuple(bad)].item()}); every copy "
                    f"of a replicated output must be written alike")


def _box(lo: np.ndarray, hi: np.ndarray, zero: bool = False) -> tuple[slice, ...]:
    """Slices of the box ``[lo, hi)`` (``zero``: shifted to start at the origin)."""
    if zero:
        return tuple(slice(0, int(b - a)) for a, b in zip(lo, hi))
    return tuple(slice(int(a), int(b)) for a, b in zip(lo, hi))


def _torch_dtype(dtype: str) -> Any:
    import torch
    name = str(dtype)
    t = getattr(torch, name, None)
    if not isinstance(t, torch.dtype):
        raise ValueError(f"T.MeshTensor: dtype {name!r} has no torch equivalent")
    return t


# Parameter buffers created by T.MeshTensor, keyed by their data variable (TVM hashes
# objects by identity, so a kernel's parameter finds its own entry). An entry whose
# variable nothing but this dict holds any more belongs to a kernel that is gone: it
# is dropped when the dict has doubled since the last sweep, so the dict stays within
# twice the number of live T.MeshTensor parameters.
_REGISTRY: dict[tirx.Var, MeshParam] = {}
_SWEEP_MIN = 64
_SWEEP = {"at": _SWEEP_MIN}


def _strong_refs(obj: Any) -> int | None:
    """The C++ strong reference count of a TVM object: the low 32 bits of the first
    field (``combined_ref_count``) of tvm-ffi's C object header (``TVMFFIObject`` in
    ``tvm/ffi/c_api.h``); ``None`` where it cannot be read."""
    handle = getattr(obj, "__chandle__", None)
    if handle is None:
        return None
    return ctypes.c_uint64.from_address(handle()).value & 0xFFFFFFFF


def _counts_refs() -> bool:
    """Whether :func:`_strong_refs` reads this TVM's counts (checked once): a reference
    taken by an expression shows, and goes when the expression does."""
    if "ok" not in _SWEEP:
        v = tirx.Var("probe", "int32")
        before = _strong_refs(v)
        e = tirx.Add(v, v)
        during = _strong_refs(v)
        del e
        _SWEEP["ok"] = before is not None and before >= 1 and during == before + 2 and \
            _strong_refs(v) == before
    return bool(_SWEEP["ok"])


def _sweep() -> None:
    if _counts_refs():
        for var in [v for v in _REGISTRY if _strong_refs(v) == 1]:  # only the key holds it
            del _REGISTRY[var]
    _SWEEP["at"] = max(_SWEEP_MIN, 2 * len(_REGISTRY))


def register(buffer: tirx.Buffer, param: MeshParam) -> None:
    """Record that ``buffer`` (a parameter annotation's buffer) is ``param``'s shard."""
    _REGISTRY[buffer.data] = param
    if len(_REGISTRY) >= _SWEEP["at"]:
        _sweep()


def registered(buffer: tirx.Buffer) -> MeshParam | None:
    """The :class:`MeshParam` of a buffer created by ``T.MeshTensor``, else ``None``."""
    return _REGISTRY.get(buffer.data)


def mesh_params(func: tirx.PrimFunc) -> dict[int, MeshParam]:
    """The distributed-tensor parameters of a kernel: ``{parameter index: MeshParam}``
    (named after the parameter), empty for an ordinary kernel.

    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     T.evaluate(0)
    >>> mesh_params(k)
    {}
    """
    out = {}
    for i, var in enumerate(func.params):
        buf = func.buffer_map.get(var)
        p = None if buf is None else registered(buf)
        if p is not None:
            out[i] = MeshParam(str(buf.name), p.global_shape, p.sharding, p.dtype, p.layout,
                               p.policy)
    return out
