"""The launch of a mesh kernel: which core runs which program.

A mesh kernel is one program per core. Two conventions bind block indices to cores:

- **ours** (``mesh_comm`` kernels, the seed's helpers, ``spmdize``): ``T.Kernel(n0, n1[,
  n2])`` with the grid equal to the mesh shape puts block ``(b0, b1, ...)`` on the core
  with those coordinates (``blockIdx.x`` is mesh axis 0, ``blockIdx.y`` axis 1,
  ``blockIdx.z`` axis 2): on a ``{"x": 4, "y": 4}`` mesh block ``(bx, by)`` is core
  ``(x=bx, y=by)``;
- **SUNMMIO's** (kernels written for its TileLang: ``T.comm`` ops or ``T.MeshTensor``
  parameters): ``T.Kernel()`` (or ``T.Kernel(T.mesh_ncores())``) is one program per
  core, its variable the linear core id ``row * ncols + col``; a grid ``T.Kernel(gx,
  gy[, gz])`` numbers its blocks as CUDA and TileLang do, ``b = bx + gx * (by + gy *
  bz)``, and block ``b`` runs on core ``b`` (the upstream's SUMMA ``T.Kernel(ncols,
  nrows) as (bx, by)`` is block ``(bx, by)`` on core row ``by``, column ``bx``); a grid
  of more blocks than cores runs as a loop on each core over blocks ``core, core + n,
  core + 2n, ...`` (:func:`upstream_launch` writes both as a 1-D launch).

Either way a 1-D launch ``T.Kernel(mesh.size)`` numbers the cores by their linear
(row-major) id. Every pass asks one :class:`Launch` value for core coordinates, as TIR
expressions (to rewrite a kernel) or as NumPy arrays (to evaluate it); none re-derives
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from tvm import arith, ir, tirx

from ...mesh import Mesh
from .expr import static_int

__all__ = ["Launch", "row_major", "unravel", "BLOCK_TAGS", "upstream_launch",
           "upstream_launch_guard", "launch_grid"]

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def row_major(coords: Sequence[Any], sizes: Sequence[int]) -> tirx.PrimExpr:
    """The row-major linear index of ``coords`` (TIR expressions) on a grid of ``sizes``.

    >>> import tilelang
    >>> from tvm import tirx
    >>> r, c = tirx.Var("r", "int32"), tirx.Var("c", "int32")
    >>> str(row_major([r, c], [2, 4]))
    'r * 4 + c'
    """
    lin: Any = tirx.IntImm("int32", 0)
    for c, s in zip(coords, sizes):
        lin = lin * s + c
    return arith.Analyzer().simplify(lin)


def unravel(lin: Any, sizes: Sequence[int]) -> list[tirx.PrimExpr]:
    """The coordinates (TIR expressions) of row-major index ``lin`` on a grid of
    ``sizes``."""
    out: list = []
    rest = lin
    for size in reversed(sizes):
        out.insert(0, tirx.floormod(rest, size))
        rest = tirx.floordiv(rest, size)
    return out


def _block_loops(node: Any) -> list[tirx.For]:
    loops: list[tirx.For] = []

    def visit(n: Any) -> bool:
        if (isinstance(n, tirx.For) and n.kind == tirx.ForKind.THREAD_BINDING
                and n.thread_binding is not None
                and n.thread_binding.thread_tag in BLOCK_TAGS):
            loops.append(n)
        return True

    tirx.stmt_functor.pre_order_visit(node.body if isinstance(node, tirx.PrimFunc) else node,
                                      visit)
    return loops


@dataclass(frozen=True, eq=False)
class Launch:
    """How a kernel's block indices name the cores of ``mesh``.

    ``vars`` are the launch variables: one per mesh axis in axis order (an n-D launch),
    one linear core id (``linear``: a 1-D launch on a mesh of several axes), or none (a
    mesh of one core launched without blocks). ``extents`` are their grid sizes.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> from meshtensor import Mesh
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(8, threads=1) as bx:
    ...         T.evaluate(0)
    >>> launch = Launch.of(k, Mesh({"row": 2, "col": 4}), "example")
    >>> launch.linear, [str(c) for c in launch.coords()]
    (True, ['bx // 4 % 2', 'bx % 4'])
    >>> [v.tolist() for v in launch.env_of(np.array([1, 6])).values()]
    [[1, 6]]
    >>> str(launch.bound(arith.Analyzer()).simplify(launch.vars[0] % 8))
    'bx'
    """

    mesh: Mesh
    vars: tuple[tirx.Var, ...]
    linear: bool

    @staticmethod
    def of(func: tirx.PrimFunc | tirx.Stmt, mesh: Mesh, where: str) -> "Launch":
        """The launch of a kernel (a PrimFunc or statement) on ``mesh``; ``ValueError``
        naming ``where`` when its grid is not one program per core."""
        loops = _block_loops(func)
        tags = [lp.thread_binding.thread_tag for lp in loops]
        extents = [static_int(lp.extent) for lp in loops]
        if len(set(tags)) != len(tags):
            raise ValueError(f"{where}: the kernel launches blocks more than once "
                             f"({tags}); a mesh kernel is one T.Kernel, one program per "
                             f"core")
        if None in extents:
            raise ValueError(f"{where}: the launch grid {[str(lp.extent) for lp in loops]} "
                             f"is symbolic: launch one program per core of the mesh "
                             f"{mesh.as_dict}")
        if not loops and mesh.size == 1:
            return Launch(mesh, (), False)
        if len(loops) == 1 and extents[0] == mesh.size:
            return Launch(mesh, (loops[0].loop_var,), mesh.ndim != 1)
        order = sorted(range(len(loops)), key=lambda i: tags[i])
        if len(loops) == mesh.ndim and [extents[i] for i in order] == list(mesh.shape):
            return Launch(mesh, tuple(loops[i].loop_var for i in order), False)
        grid = ", ".join(str(e) for e in (extents[i] for i in order)) or "no blocks"
        raise ValueError(f"{where}: the launch grid ({grid}) does not match the mesh "
                         f"{mesh.as_dict}: launch T.Kernel"
                         f"({', '.join(map(str, mesh.shape))}) (block = core coordinates) "
                         f"or T.Kernel({mesh.size}) (block = linear core id)")

    def coords(self) -> list[tirx.PrimExpr]:
        """This program's core coordinates, one TIR expression per mesh axis."""
        if not self.vars:
            return [tirx.IntImm("int32", 0)] * self.mesh.ndim
        if self.linear:
            return unravel(self.vars[0], self.mesh.shape)
        return list(self.vars)

    def core_id(self) -> tirx.PrimExpr:
        """This program's linear core id as a TIR expression."""
        if len(self.vars) == 1:
            return self.vars[0]
        return row_major(self.coords(), self.mesh.shape)

    def at(self, coords: Sequence[Any]) -> dict[tirx.Var, tirx.PrimExpr]:
        """The substitution that turns an expression of this program's launch variables
        into one of the core at ``coords`` (TIR expressions or ints)."""
        if self.linear:
            return {self.vars[0]: row_major(coords, self.mesh.shape)}
        return {v: (c if isinstance(c, tirx.PrimExpr) else tirx.IntImm("int32", int(c)))
                for v, c in zip(self.vars, coords)}

    def core_of(self, env: Mapping[tirx.Var, Any], size: int) -> np.ndarray:
        """The linear core id at each of ``size`` evaluated points (``env`` binds the
        launch variables to arrays), int64."""
        if not self.vars:
            return np.zeros(size, dtype=np.int64)
        vals = [np.broadcast_to(np.asarray(env[v], dtype=np.int64), (size,))
                for v in self.vars]
        if len(vals) == 1:
            return vals[0].astype(np.int64, copy=True)
        return np.ravel_multi_index(vals, self.mesh.shape).astype(np.int64)

    def env_of(self, cores: np.ndarray) -> dict[tirx.Var, np.ndarray]:
        """The launch variables' values on the cores with linear ids ``cores`` (the
        inverse of :meth:`core_of`), to evaluate an expression there."""
        if self.linear:
            return {self.vars[0]: np.asarray(cores)}
        return {v: self.mesh.coords[cores][:, a] for a, v in enumerate(self.vars)}

    def bound(self, ana: arith.Analyzer) -> arith.Analyzer:
        """``ana`` with each launch variable bound to its range ``[0, extent)``."""
        extents = (self.mesh.size,) if self.linear else self.mesh.shape
        for v, n in zip(self.vars, extents):
            ana.bind(v, ir.Range.from_min_extent(0, n))
        return ana

    def is_launch_var(self, var: tirx.Var) -> bool:
        return any(var.same_as(v) for v in self.vars)


def upstream_launch(func: tirx.PrimFunc, mesh: Mesh, where: str) -> tirx.PrimFunc:
    """A SUNMMIO kernel's launch as one program per core (a 1-D launch of
    ``mesh.size``), binding its block indices as the upstream does: block ``b = bx + gx
    * (by + gy * bz)`` runs on core ``b``; with more blocks than cores, core ``c`` runs
    blocks ``c, c + n, ...`` in a loop (a guard skips the last wave's missing blocks);
    with fewer, the cores past the grid run nothing (:func:`upstream_launch_guard` also
    returns the condition under which a core runs a block, which its comm ops must
    respect). A kernel already launched as one program per core comes back unchanged.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> from meshtensor import Mesh
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(4, 2, threads=1) as (bx, by):
    ...         T.evaluate(by * 4 + bx)
    >>> f = upstream_launch(k, Mesh({"row": 2, "col": 4}), "example")
    >>> [str(lp.extent) for lp in _block_loops(f)]
    ['8']
    """
    return upstream_launch_guard(func, mesh, where)[0]


def upstream_launch_guard(func: tirx.PrimFunc, mesh: Mesh, where: str
                          ) -> tuple[tirx.PrimFunc, tirx.PrimExpr | None]:
    """:func:`upstream_launch`, and the condition under which a core runs a block
    (``None`` when every core runs one in every wave): cores past the grid, or past
    the last wave's blocks, run nothing there, and a comm op they would take part in
    cannot run (the chip's cores run only their own blocks).

    >>> import tilelang
    >>> import tilelang.language as T
    >>> from meshtensor import Mesh
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(3, threads=1) as bx:
    ...         T.evaluate(bx)
    >>> str(upstream_launch_guard(k, Mesh({"row": 2, "col": 2}), "example")[1])
    'cid < 3'
    """
    loops = _block_loops(func)
    if not loops:
        return func, None
    tags = [lp.thread_binding.thread_tag for lp in loops]
    if len(set(tags)) != len(tags):
        raise ValueError(f"{where}: the kernel launches blocks more than once ({tags}); a "
                         f"mesh kernel is one T.Kernel")
    static = [static_int(lp.extent) for lp in loops]
    symbolic = None in static
    # a symbolic grid (a size the kernel reads from its tensors) runs as a loop of
    # ceil(blocks / cores) waves on every core, each block under the guard
    extents: list = [lp.extent if s is None else s for lp, s in zip(loops, static)]
    n = mesh.size
    order = sorted(range(len(loops)), key=lambda i: tags[i])
    grid = [extents[i] for i in order]
    if symbolic:
        total: Any = grid[0]
        for g in grid[1:]:
            total = total * g
    else:
        total = int(np.prod(grid, dtype=np.int64))
        if len(loops) == 1 and total == n:
            return func, None
    outer = loops[order[0]] if tags[order[0]] == "blockIdx.x" else loops[0]
    first = loops[0]  # the outermost block loop: the nest is replaced from here
    inner = loops[-1].body
    cid = tirx.Var("cid", "int32")
    waves: Any = tirx.floordiv(total + (n - 1), n) if symbolic else -(-total // n)
    w = tirx.Var("w", "int32")
    b: Any = w * n + cid if symbolic or waves > 1 else cid
    binds = []
    rest: Any = b
    for i, lp in zip(order, (loops[i] for i in order)):
        size = extents[i]
        if len(loops) == 1 or not symbolic and size == total:
            value = rest
        else:
            value = tirx.floormod(rest, size)
        binds.append(tirx.Bind(lp.loop_var, value if value.dtype == lp.loop_var.dtype
                               else tirx.Cast(lp.loop_var.dtype, value)))
        rest = tirx.floordiv(rest, size)
    guard = b < total if symbolic or total % n or total < n else None

    def wrap(body: Any) -> Any:
        body = tirx.SeqStmt(binds + [body])
        if guard is not None:
            body = tirx.IfThenElse(guard, body, None)
        if symbolic or waves > 1:
            ext = waves if symbolic else tirx.IntImm("int32", waves)
            body = tirx.For(w, tirx.IntImm("int32", 0), ext, tirx.ForKind.SERIAL, body)
        return body

    # the block indices are bound inside TileLang's root block, where the kernel's code
    # starts (the thread bindings and the block's allocations stay where TileLang puts
    # them)
    done: list = []

    def root(node: Any) -> Any:
        if done or node.block.name_hint != "tilelang_root":
            return None
        done.append(node)
        blk = node.block
        return tirx.SBlockRealize(node.iter_values, node.predicate, tirx.SBlock(
            blk.iter_vars, blk.reads, blk.writes, blk.name_hint, wrap(blk.body), blk.init,
            blk.alloc_buffers, blk.match_buffers, blk.annotations))

    inner = tirx.stmt_functor.ir_transform(inner, None, root, ["tirx.SBlockRealize"])
    if not done:
        raise ValueError(f"{where}: the kernel has no T.Kernel body block (tilelang_root) "
                         f"to run its blocks in")
    iv = tirx.IterVar(ir.Range.from_min_extent(0, n), cid, 1, "blockIdx.x")
    new_loop = tirx.For(cid, tirx.IntImm("int32", 0), tirx.IntImm("int32", n),
                        tirx.ForKind.THREAD_BINDING, inner, iv, outer.annotations)

    def post(node: Any) -> Any:
        return new_loop if node.same_as(first) else None

    out = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.For"])
    return tirx.PrimFunc(func.params, out, func.ret_type, func.buffer_map, func.attrs), guard


def launch_grid(func: tirx.PrimFunc | tirx.Stmt) -> list[int | None]:
    """The extents of a kernel's block indices in ``blockIdx.x, .y, .z`` order (``None``
    for a symbolic one); ``[]`` for a kernel without blocks.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 3, threads=1) as (bx, by):
    ...         T.evaluate(0)
    >>> launch_grid(k)
    [2, 3]
    """
    loops = sorted(_block_loops(func), key=lambda lp: lp.thread_binding.thread_tag)
    return [static_int(lp.extent) for lp in loops]
