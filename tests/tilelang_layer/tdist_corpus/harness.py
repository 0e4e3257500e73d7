"""Running the ported T.dist kernels of the corpus (test_tdist_corpus.py).

The upstream's kernels are IR tests: factories ``@tilelang.jit(target="sunmmio")``
built with ``factory.get_tir(..., world_size=W)``, whose on-chip buffers are mostly
never written by the kernel (nothing runs them upstream). :data:`upstream_tilelang`
stands in for the ``tilelang`` those modules import (the one import line changed);
:func:`seed` gives chosen on-chip buffers values when each core's program starts (as
if memory held them: one input ``INIT_<name>`` of shape ``(cores, *shape)`` per buffer,
per rank), and the tilelang-mesh corpus harness's ``observe`` reads buffers back when
the program ends. Nothing else of a kernel changes.
"""
from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import sys
from typing import Any, Callable

import tilelang  # noqa: F401
from tvm import tirx

from meshtensor.tilelang import tilelang_mesh as tm

HERE = pathlib.Path(__file__).parent


def _tm_harness() -> Any:
    """The tilelang-mesh corpus harness (its ``observe``)."""
    name = "tm_corpus_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE.parent / "corpus" / "harness.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def observe(func: tirx.PrimFunc, names: list[str]) -> tirx.PrimFunc:
    # nothing to observe: the body stays as it is (a SeqStmt of one is not allowed)
    return _tm_harness().observe(func, names) if names else func


class Factory:
    """A ``@tilelang.jit`` kernel factory: ``get_tir(*args, world_size=W)`` builds the
    kernel for ``W`` ranks (inside ``tm.world(W)``)."""

    def __init__(self, fn: Callable):
        self.func = fn

    def get_tir(self, *args: Any, world_size: int = 1, **kw: Any) -> tirx.PrimFunc:
        with tm.world(world_size):
            return self.func(*args, world_size=world_size, **kw)


class _UpstreamTileLang:
    """What the corpus modules use of ``tilelang``: ``jit(target=...)``."""

    @staticmethod
    def jit(*_: Any, **__: Any) -> Callable[[Callable], Factory]:
        return Factory


upstream_tilelang = _UpstreamTileLang()


class _UpstreamPytest:
    """What the corpus modules use of ``pytest`` (in a test function that defines a
    kernel inside itself, ported as that function): ``raises``, which lets the error
    through, so that the corpus test checks its type and message."""

    @staticmethod
    def raises(*_: Any, **__: Any) -> Any:
        return contextlib.nullcontext()


upstream_pytest = _UpstreamPytest()


class _UpstreamTVM:
    """What the corpus modules use of ``tvm`` (``from tilelang import tvm`` upstream):
    tilelang 0.1.15's, whose ``tir`` is named ``tirx``."""

    tir = tirx

    def __getattr__(self, name: str) -> Any:
        import tvm
        return getattr(tvm, name)


upstream_tvm = _UpstreamTVM()


def seed(func: tirx.PrimFunc, names: list[str]) -> tirx.PrimFunc:
    """``func`` with an input ``INIT_<name>`` per on-chip buffer ``name``, ``(cores,
    *shape)``: each core copies its row into the buffer when its program starts."""
    if not names:  # nothing to seed (a SeqStmt of one statement is not allowed)
        return func
    bvars, extents = _tm_harness()._blocks(func)
    lin: Any = tirx.IntImm("int32", 0)
    for v, n in reversed(list(zip(bvars, extents))):
        lin = lin * n + v
    ncores = 1
    for n in extents:
        ncores *= n
    allocs: dict = {}

    def find(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            for b in n.alloc_buffers:
                allocs[str(b.name)] = b

    tirx.stmt_functor.post_order_visit(func.body, find)
    params, bmap, loads = list(func.params), dict(func.buffer_map), []
    for name in names:
        buf = allocs[name]
        shape = [int(s) for s in buf.shape]
        # tilelang's C wrapper takes no unsigned parameter: an unsigned buffer is seeded
        # from int64 values
        dt = str(buf.dtype)
        pdt = "int64" if dt.startswith("uint") else dt
        init = tirx.decl_buffer([ncores] + shape, pdt, f"INIT_{name}")
        handle = tirx.Var(f"INIT_{name}_handle", "handle")
        params.append(handle)
        bmap[handle] = init
        idx = [tirx.Var(f"i{d}", "int32") for d in range(len(shape))]
        val: Any = tirx.BufferLoad(init, [lin] + idx)
        body: Any = tirx.BufferStore(buf, val if pdt == dt else tirx.Cast(dt, val), idx)
        for v, n in reversed(list(zip(idx, shape))):
            body = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", n),
                            tirx.ForKind.SERIAL, body)
        loads.append(body)
    done: list = []

    def post(n: Any) -> Any:
        if done or n.name_hint != "tilelang_root":
            return None
        done.append(n)
        return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint,
                           tirx.SeqStmt(loads + [n.body]), n.init, n.alloc_buffers,
                           n.match_buffers, n.annotations)

    body = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.SBlock"])
    return tirx.PrimFunc(params, body, func.ret_type, bmap, func.attrs)


def load(name: str) -> Any:
    """A corpus module of this folder."""
    if "tdist_corpus_harness" not in sys.modules:
        sys.modules["tdist_corpus_harness"] = sys.modules[__name__]
    spec = importlib.util.spec_from_file_location(f"tdist_corpus_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
