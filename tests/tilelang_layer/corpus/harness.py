"""Running a ported kernel of the SUNMMIO corpus and seeing what it computed.

Most of the upstream's kernels are IR tests: they write nothing to global memory. To
check them against NumPy without editing them, :func:`observe` adds one output
parameter per named on-chip buffer, ``(blocks, *shape)``, into which each block copies
its buffer when its program ends (block ``bx + gx * (by + gy * bz)``); nothing else of
the kernel changes.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import tilelang  # noqa: F401
import torch
from tvm import ir, tirx

HERE = pathlib.Path(__file__).parent


def load(name: str) -> Any:
    """A corpus module of this folder (``corpus/<name>.py``)."""
    spec = importlib.util.spec_from_file_location(f"tm_corpus_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def target(*_: Any, **__: Any) -> Callable:
    """The upstream tests' ``@target("Sunmmio")`` decorator (it sets the compile target;
    here the target is the mesh of ``tm.enable``)."""
    def wrap(fn: Callable) -> Callable:
        return fn
    return wrap


def determine_target(*_: Any, **__: Any) -> Any:
    """The tests' ``determine_target("Sunmmio", ...)`` (SUNMMIO's target, its mesh in
    its attributes): here the C target; the mesh is the one of ``tm.enable``."""
    import tvm
    return tvm.target.Target("c")


def _blocks(func: tirx.PrimFunc) -> tuple[list, list]:
    loops: list = []

    def visit(n: Any) -> None:
        if (isinstance(n, tirx.For) and n.kind == tirx.ForKind.THREAD_BINDING
                and n.thread_binding is not None
                and n.thread_binding.thread_tag.startswith("blockIdx")):
            loops.append(n)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    loops.sort(key=lambda lp: lp.thread_binding.thread_tag)
    return [lp.loop_var for lp in loops], [int(lp.extent) for lp in loops]


def observe(func: tirx.PrimFunc, names: list[str]) -> tirx.PrimFunc:
    """``func`` with an output ``OBS_<name>`` per on-chip buffer ``name``: each block
    copies the buffer there at the end of its program."""
    bvars, extents = _blocks(func)
    lin: Any = tirx.IntImm("int32", 0)
    for v, n in reversed(list(zip(bvars, extents))):
        lin = lin * n + v
    nblocks = int(np.prod(extents)) if extents else 1
    allocs: dict = {}

    def find(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            for b in n.alloc_buffers:
                allocs[str(b.name)] = b

    tirx.stmt_functor.post_order_visit(func.body, find)
    params, bmap, stores = list(func.params), dict(func.buffer_map), []
    for name in names:
        buf = allocs[name]
        shape = [int(s) for s in buf.shape]
        out = tirx.decl_buffer([nblocks] + shape, str(buf.dtype), f"OBS_{name}")
        handle = tirx.Var(f"OBS_{name}_handle", "handle")
        params.append(handle)
        bmap[handle] = out
        idx = [tirx.Var(f"o{d}", "int32") for d in range(len(shape))]
        body: Any = tirx.BufferStore(out, tirx.BufferLoad(buf, idx), [lin] + idx)
        for v, n in reversed(list(zip(idx, shape))):
            body = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", n),
                            tirx.ForKind.SERIAL, body)
        stores.append(body)
    done: list = []

    def post(n: Any) -> Any:
        if done or n.name_hint != "tilelang_root":
            return None
        done.append(n)
        return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint,
                           tirx.SeqStmt([n.body] + stores), n.init, n.alloc_buffers,
                           n.match_buffers, n.annotations)

    body = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.SBlock"])
    return tirx.PrimFunc(params, body, func.ret_type, bmap, func.attrs)


def torch_dtype(name: str) -> Any:
    return {"float": torch.float32}.get(name) or getattr(torch, name)


@dataclass
class Inputs:
    """The tensors a case passes: ``arrays[i]`` for parameter ``i`` (NumPy, the values
    the reference reads), and the torch tensors given to the kernel."""

    arrays: list
    tensors: list
    obs: dict = field(default_factory=dict)


def make_inputs(func: tirx.PrimFunc, global_shapes: dict, rng: np.random.Generator,
                lo: int = -3, hi: int = 4) -> Inputs:
    """Integer-valued random inputs for every parameter (exact in every dtype the corpus
    uses), zeros for the ``OBS_`` outputs. ``global_shapes``: parameter name -> the
    caller's shape (a ``T.MeshTensor`` takes the global tensor)."""
    arrays, tensors, obs = [], [], {}
    for p in func.params:
        buf = func.buffer_map[p]
        name = str(buf.name)
        shape = tuple(global_shapes[name] if name in global_shapes
                      else [int(s) for s in buf.shape])
        dt = _BY_CODE.get(str(buf.dtype)) or torch_dtype(str(buf.dtype))
        if name.startswith("OBS_"):
            t = torch.zeros(shape, dtype=dt)
            obs[name[4:]] = t
            arrays.append(None)
        elif str(buf.dtype) in _BY_CODE:
            # an MX tensor's scales (powers of two) and 4-bit elements: their codes,
            # made by ml_dtypes (torch has no float4_e2m1fn, no float-to-e8m0 cast)
            a = rng.integers(lo, hi, shape).astype(np.float32)
            if str(buf.dtype) == "float8_e8m0fnu":
                a = np.float32(2.0) ** a
            t = torch.from_numpy(_codes(a, str(buf.dtype))).view(dt)
            arrays.append(a)
        else:
            a = rng.integers(lo, hi, shape).astype(np.float32)
            # a copy: a float32 tensor from_numpy would share a's memory, and the
            # reference would read what the kernel wrote
            t = torch.from_numpy(a.copy()).to(dt)
            arrays.append(a)
        tensors.append(t)
    return Inputs(arrays, tensors, obs)


_BY_CODE = {"float8_e8m0fnu": torch.float8_e8m0fnu, "float4_e2m1fn": torch.uint8}


def _codes(a: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes
    return a.astype(getattr(ml_dtypes, dtype)).view(np.uint8).copy()


def call_args(func: tirx.PrimFunc, tensors: list) -> list:
    """The kernel's call: each MX ``T.MeshTensor``'s two parameters (elements, scales)
    as the one ``(elements, scales)`` pair its caller passes."""
    from meshtensor.tilelang.ir.mesh_param import MX_PARAMS
    pairs = {int(e): int(s) for e, s in (func.attrs.get(MX_PARAMS, []) if func.attrs
                                         is not None else [])}
    seconds = set(pairs.values())
    return [(t, tensors[pairs[i]]) if i in pairs else t
            for i, t in enumerate(tensors) if i not in seconds]


def as_np(t: torch.Tensor) -> np.ndarray:
    """The tensor's values in NumPy: the narrow floating-point kinds (which NumPy does
    not hold natively) as float32."""
    narrow = (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)
    if t.dtype == torch.float8_e8m0fnu:
        import ml_dtypes
        return t.view(torch.uint8).numpy().view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    return t.float().numpy() if t.dtype in narrow else t.numpy()


__all__ = ["load", "target", "determine_target", "observe", "make_inputs", "Inputs", "as_np",
           "ir", "call_args"]


class _Jit:
    """The examples' ``@tilelang.jit(...)`` (it compiles for the default target when
    the factory is called); here the factory returns the ``T.prim_func``, which
    ``compile_mesh_kernel`` compiles for the mesh. Imported in place of ``tilelang``."""

    @staticmethod
    def jit(*_: Any, **__: Any) -> Callable:
        def wrap(fn: Callable) -> Callable:
            return fn
        return wrap


tilelang_jit = _Jit()
