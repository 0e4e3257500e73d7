"""Other systems' forms of a layout: JAX ``PartitionSpec``, PyTorch DTensor placements,
MLIR's ``shard.sharding`` and the seed dict, read into a :class:`Sharding`'s fields and
written from one.

This module sits below :mod:`meshtensor.sharding`: readers return the fields
(``split_axes`` and keyword arguments) that the ``Sharding`` constructors
(``Sharding.from_partition_spec``, ``from_placements``, ``from_mlir``) build from, and
writers take any sharding. :mod:`meshtensor.interop` is the public face of both
directions. Each form says less than a ``Sharding`` can; a sharding the other side
cannot express raises ``ValueError`` naming what is missing (halos, offsets, partial
axes, an axis order). torch and jax are imported only when their objects are needed,
so ``import meshtensor`` stays light.

    form                      partial   halos   offsets   several axes on a dim
    JAX PartitionSpec         no        no      no        yes, any order
    DTensor placements        yes (*)   no      nested    mesh-axis order only
    MLIR shard.sharding       no        yes     yes       yes, any order
    seed dict                 no        no      no        mesh-axis order only

    (*) sum, max, min and prod; DTensor's "avg" and bitwise ops have no counterpart.
"""

from __future__ import annotations

import importlib.util
import math
import re
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .mesh import Mesh, _is_int
from .shapes import _shape_tuple, chunk_bounds, nested_chunk_bounds

if TYPE_CHECKING:  # pragma: no cover  (annotations only: sharding imports this module)
    from .sharding import Sharding


def _axis_names(s: Sharding, axes: Sequence[int]) -> list[str]:
    return [s.mesh.axis_names[a] for a in axes]


def _refuse(s: Sharding, form: str, *, partial: bool = True, halos: bool = True,
            offsets: bool = True) -> None:
    """ValueError naming the first feature of ``s`` that ``form`` cannot say."""
    if partial and s.partial_axes:
        raise ValueError(f"{form}: sharding {s} is partial ({s.partial_kind} over mesh axes "
                         f"{_axis_names(s, s.partial_axes)}); {form} cannot express partial "
                         f"values (reduce first)")
    if halos and s.halo_sizes:
        raise ValueError(f"{form}: sharding {s} has halo_sizes {list(s.halo_sizes)}; "
                         f"{form} cannot express halos")
    if offsets and s.sharded_dims_offsets:
        raise ValueError(f"{form}: sharding {s} has sharded_dims_offsets "
                         f"{list(s.sharded_dims_offsets)}; {form} can only express the "
                         f"ceil-div layout")


# -- JAX PartitionSpec ------------------------------------------------------------------
def _jax_partition_spec():
    """``jax.sharding.PartitionSpec`` or None when jax cannot be imported."""
    if importlib.util.find_spec("jax") is None:
        return None
    try:
        from jax.sharding import PartitionSpec
    except Exception:  # a broken jax install is treated as no jax
        return None
    return PartitionSpec


def partition_spec_split(mesh: Mesh, spec: Any, ndim: int | None = None) -> list[list[Any]]:
    """The ``split_axes`` of a JAX ``PartitionSpec`` or of a plain tuple with one entry
    per dim: ``None``, a mesh axis name, or a tuple of names (outer to inner).

    >>> m = Mesh({"x": 2, "y": 2})
    >>> partition_spec_split(m, ("y", None, ("x",)))
    [['y'], [], ['x']]
    >>> partition_spec_split(m, (("x", "y"),), ndim=2)
    [['x', 'y']]
    """
    what = "Sharding.from_partition_spec"
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{what}: mesh must be a Mesh, got {type(mesh).__name__}")
    if isinstance(spec, (str, bytes)) or not hasattr(spec, "__iter__"):
        raise TypeError(f"{what}: spec must be a PartitionSpec or a tuple with one entry "
                        f"per tensor dim, got {type(spec).__name__} {spec!r}")
    if getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        raise ValueError(f"{what}: spec {spec!r} has unreduced/reduced axes; meshtensor "
                         f"reads only the split part of a PartitionSpec (use Sharding(..., "
                         f"partial=...) for partial values)")
    entries = list(spec)
    if ndim is not None:
        if not _is_int(ndim) or ndim < 0:
            raise ValueError(f"{what}: ndim must be an int >= 0, got {ndim!r}")
        if len(entries) > ndim:
            raise ValueError(f"{what}: spec {tuple(entries)!r} has {len(entries)} entries "
                             f"but the tensor has rank {ndim}")
    split: list[list[Any]] = []
    for d, e in enumerate(entries):
        if e is None:
            split.append([])
        elif isinstance(e, str):
            split.append([e])
        elif isinstance(e, (tuple, list)) and all(isinstance(a, str) for a in e):
            split.append(list(e))
        else:
            raise ValueError(f"{what}: spec entry {d} is {e!r}; expected None, a mesh axis "
                             f"name or a tuple of names (mesh axes are "
                             f"{list(mesh.axis_names)})")
    return split


def to_partition_spec(s: Sharding) -> Any:
    """The JAX form: a ``jax.sharding.PartitionSpec`` when jax can be imported, else a
    plain tuple; one entry per dim up to the last split one (``None``, a name, or a
    tuple of names for several axes).

    >>> from meshtensor import Sharding
    >>> s = Sharding(Mesh({"x": 2, "y": 2}), [[], ["y", "x"]])
    >>> tuple(to_partition_spec(s))
    (None, ('y', 'x'))
    """
    _refuse(s, "PartitionSpec")
    out: list[Any] = []
    for axes in s.split_axes:
        names = _axis_names(s, axes)
        out.append(None if not names else names[0] if len(names) == 1 else tuple(names))
    P = _jax_partition_spec()
    return P(*out) if P is not None else tuple(out)


# -- PyTorch DTensor placements -----------------------------------------------------------
# Our reduction kinds and DTensor's Partial reduce_op names (c10d ReduceOp, lower case).
_TO_TORCH_OP = {"sum": "sum", "max": "max", "min": "min", "prod": "product"}
_FROM_TORCH_OP = {"sum": "sum", "max": "max", "min": "min", "product": "prod"}
_PLACEMENT_TEXT = re.compile(r"^\s*(?:(R)|S\(\s*(-?\d+)\s*\)|P(?:\(\s*(\w+)\s*\))?)\s*$")


def _placement(p: Any, mesh_axis: int, ndim: int, what: str) -> tuple[str, Any]:
    """``("R", None)``, ``("S", dim)`` or ``("P", kind)`` from a torch placement or its
    short text (``"R"``, ``"S(0)"``, ``"P(sum)"``)."""
    if isinstance(p, str):
        m = _PLACEMENT_TEXT.match(p)
        if not m:
            raise ValueError(f"{what}: placement {p!r} on mesh axis {mesh_axis} is not one "
                             f"of 'R', 'S(dim)', 'P(op)'")
        if m.group(1):
            return "R", None
        if m.group(2) is not None:
            kind, value = "S", int(m.group(2))
        else:
            kind, value = "P", m.group(3) or "sum"
    else:
        cls = type(p).__name__
        if not all(hasattr(p, f) for f in ("is_shard", "is_replicate", "is_partial")):
            raise TypeError(f"{what}: placement {p!r} on mesh axis {mesh_axis} is a "
                            f"{cls}; expected a torch.distributed.tensor Placement "
                            f"(Shard, Replicate, Partial) or its text 'S(0)', 'R', 'P(sum)'")
        if cls in ("_StridedShard", "_MaskPartial") or (
                not p.is_shard() and not p.is_replicate() and not p.is_partial()):
            raise ValueError(f"{what}: placement {p!r} on mesh axis {mesh_axis} ({cls}) has "
                             f"no meshtensor counterpart; only Shard, Replicate and Partial")
        if p.is_replicate():
            return "R", None
        if p.is_shard():
            kind, value = "S", int(p.dim)
        else:
            kind, value = "P", str(p.reduce_op)
    if kind == "S":
        if not -ndim <= value < ndim:
            raise ValueError(f"{what}: placement Shard({value}) on mesh axis {mesh_axis} "
                             f"is out of range for a tensor of rank {ndim}")
        return "S", value % ndim
    if value not in _FROM_TORCH_OP:
        raise ValueError(f"{what}: Partial({value!r}) on mesh axis {mesh_axis} has no "
                         f"meshtensor partial kind; DTensor's {sorted(_FROM_TORCH_OP)} map "
                         f"to {sorted(_TO_TORCH_OP)}")
    return "P", _FROM_TORCH_OP[value]


def placements_fields(mesh: Mesh, placements: Sequence[Any], ndim: int,
                      global_shape: Sequence[int] | None = None
                      ) -> tuple[list[list[int]], dict[str, Any]]:
    """The fields of a sharding given by DTensor placements, one per mesh axis:
    ``Shard(d)``, ``Replicate()``, ``Partial(op)`` (torch objects, or their text
    ``"S(0)"``, ``"R"``, ``"P(sum)"``): ``(split_axes, keyword arguments)``.

    Several mesh axes sharding one dim split it outer to inner in mesh-axis order, as
    DTensor does. DTensor chunks them nested (a ``torch.chunk`` of a chunk), which
    differs from the flat ceil-div rule when sizes do not divide: given
    ``global_shape``, the fields reproduce DTensor's layout exactly (as
    ``sharded_dims_offsets`` where the two differ).

    >>> m = Mesh({"x": 2, "y": 2})
    >>> placements_fields(m, ["S(1)", "S(0)"], 2)
    ([[1], [0]], {})
    >>> placements_fields(m, ["S(0)", "S(0)"], 1, global_shape=(6,))[1]
    {'sharded_dims_offsets': [0, 2, 3, 5, 6]}
    """
    what = "Sharding.from_placements"
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{what}: mesh must be a Mesh, got {type(mesh).__name__}")
    if not _is_int(ndim) or ndim < 0:
        raise ValueError(f"{what}: ndim must be an int >= 0, got {ndim!r}")
    if isinstance(placements, (str, bytes)) or not isinstance(placements, Sequence):
        raise TypeError(f"{what}: placements must be a sequence with one placement per "
                        f"mesh axis, got {placements!r}")
    if len(placements) != mesh.ndim:
        raise ValueError(f"{what}: {len(placements)} placements for a mesh with "
                         f"{mesh.ndim} axes {list(mesh.axis_names)}; DTensor needs one per "
                         f"mesh axis")
    split: list[list[int]] = [[] for _ in range(ndim)]
    partial: dict[int, str] = {}
    for a, p in enumerate(placements):
        kind, value = _placement(p, a, ndim, what)
        if kind == "S":
            split[value].append(a)  # mesh-axis order = outer to inner
        elif kind == "P":
            partial[a] = value
    if len(set(partial.values())) > 1:
        raise ValueError(f"{what}: Partial placements with different ops "
                         f"{sorted(set(partial.values()))}; a meshtensor partial sharding "
                         f"has one kind")
    kw: dict[str, Any] = {"partial": partial} if partial else {}
    if global_shape is None:
        return split, kw
    shape = _shape_tuple(global_shape, what)
    if len(shape) != ndim:
        raise ValueError(f"{what}: global_shape {shape} has rank {len(shape)}, ndim is {ndim}")
    offsets, differs = [], False
    for d, axes in enumerate(split):
        if len(axes) > 1:  # one axis: torch.chunk is the flat rule
            ks = [mesh.shape[a] for a in axes]
            nested = nested_chunk_bounds(shape[d], ks)
            differs |= not np.array_equal(nested, chunk_bounds(shape[d], math.prod(ks)))
            offsets.extend(nested.tolist())
        elif axes:
            offsets.extend(chunk_bounds(shape[d], mesh.shape[axes[0]]).tolist())
    if differs:
        kw["sharded_dims_offsets"] = offsets
    return split, kw


def _check_dtensor_layout(s: Sharding, shape: tuple[int, ...] | None, what: str) -> None:
    """DTensor's nested chunks must give exactly ``s``'s bounds on every split dim."""
    for d in s.split_dims:
        ks = [s.mesh.shape[a] for a in s.axes_of(d)]
        off = s.offsets(d)
        if shape is None and off is None:
            continue  # no size known: the placements are the layout for divisible sizes
        n = shape[d] if shape is not None else int(off[-1])
        ours = s.dim_bounds(shape, d) if shape is not None else np.asarray(off)
        theirs = nested_chunk_bounds(n, ks)
        if not np.array_equal(ours, theirs):
            raise ValueError(f"{what}: dim {d} (size {n}) is cut at {ours.tolist()}, but "
                             f"DTensor's chunks over mesh axes {_axis_names(s, s.axes_of(d))} "
                             f"cut it at {theirs.tolist()}; DTensor cannot express this "
                             f"layout")


def to_placements(s: Sharding, global_shape: Sequence[int] | None = None) -> list[Any]:
    """DTensor placements, one per mesh axis (real ``torch.distributed.tensor`` objects;
    importing torch here only).

    Without ``global_shape``, a dim split by several axes maps to DTensor's nested
    chunks, equal to this sharding's layout when the sizes divide; with it, the layout
    is checked exactly and a mismatch is a ``ValueError``. Explicit offsets are
    accepted when they equal DTensor's nested chunks.

    >>> from meshtensor import Sharding
    >>> s = Sharding(Mesh({"x": 2, "y": 2}), [["y"], ["x"]], partial=None)
    >>> [str(p) for p in to_placements(s)]
    ['S(1)', 'S(0)']
    """
    what = "Sharding.to_placements"
    _refuse(s, "DTensor placements", partial=False, offsets=False)
    for d, axes in enumerate(s.split_axes):
        if list(axes) != sorted(axes):
            raise ValueError(f"{what}: dim {d} is split by mesh axes "
                             f"{_axis_names(s, axes)} (outer to inner); DTensor placements "
                             f"split a dim in mesh-axis order only "
                             f"({_axis_names(s, sorted(axes))})")
    shape = s.check_shape(global_shape, what) if global_shape is not None else None
    _check_dtensor_layout(s, shape, what)
    from torch.distributed.tensor import Partial, Replicate, Shard
    out: list[Any] = [Replicate() for _ in range(s.mesh.ndim)]
    for d, axes in enumerate(s.split_axes):
        for a in axes:
            out[a] = Shard(d)
    for a in s.partial_axes:
        out[a] = Partial(_TO_TORCH_OP[s.partial_kind])
    return out


# -- MLIR shard.sharding ----------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(?P<tok>%[\w.$-]+|@[\w.$-]+|![\w.]+|[A-Za-z_][\w.]*|-?\d+|\?"
                    r"|[\[\](),=:<>])|(?P<bad>\S))")
_NAME = re.compile(r"^[A-Za-z_][\w$.-]*$")


class _Tokens:
    """A token stream with positions, for errors that name the bad token."""

    def __init__(self, text: str, start: int, what: str):
        self.what = what
        self.text = text
        self.toks: list[tuple[str, int]] = []
        for m in _TOKEN.finditer(text, start):
            if m.group("bad"):
                raise ValueError(f"{what}: unexpected character {m.group('bad')!r} at "
                                 f"{self.where(m.start('bad'))}")
            if m.group("tok") is not None:
                self.toks.append((m.group("tok"), m.start("tok")))
        self.i = 0

    def where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos)
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"line {line + 1}, column {col}" if "\n" in self.text else f"column {col}"

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def next(self, expected: str) -> str:
        if self.i >= len(self.toks):
            raise ValueError(f"{self.what}: expected {expected} but the text ended")
        tok = self.toks[self.i][0]
        self.i += 1
        return tok

    def fail(self, expected: str) -> ValueError:
        tok, pos = self.toks[self.i - 1]
        return ValueError(f"{self.what}: expected {expected}, got {tok!r} at {self.where(pos)}")

    def expect(self, want: str) -> None:
        if self.next(repr(want)) != want:
            raise self.fail(repr(want))

    def int_list(self, name: str) -> list[int]:
        self.expect("[")
        out: list[int] = []
        while self.peek() != "]":
            tok = self.next(f"an int in {name}")
            if tok == "?":
                raise self.fail(f"a static int in {name} (dynamic '?' sizes are not "
                                f"supported)")
            if not re.fullmatch(r"-?\d+", tok):
                raise self.fail(f"an int in {name}")
            out.append(int(tok))
            if self.peek() == ",":
                self.next(",")
            elif self.peek() != "]":
                self.next(f"',' or ']' in {name}")
                raise self.fail(f"',' or ']' in {name}")
        self.expect("]")
        return out


def mlir_fields(text: str, mesh: Mesh) -> tuple[list[list[int]], dict[str, list[int]]]:
    """The fields of MLIR's ``shard.sharding`` op (seed 003): ``shard.sharding @grid
    split_axes = [[0], [1]]`` with optional ``halo_sizes = [...]`` or
    ``sharded_dims_offsets = [...]``; a leading ``%name =``, a trailing ``:
    !shard.sharding`` and a ``shard.grid @grid(shape = 2x2)`` line (checked against
    ``mesh``) may be included. Axes in ``split_axes`` are mesh axis indices. Returns
    ``(split_axes, keyword arguments)``.

    >>> m = Mesh([2, 2])
    >>> mlir_fields("shard.sharding @grid0 split_axes = [[], [0]] halo_sizes = [1, 2]", m)
    ([[], [0]], {'halo_sizes': [1, 2]})
    """
    what = "Sharding.from_mlir"
    if not isinstance(text, str):
        raise TypeError(f"{what}: text must be a str, got {type(text).__name__}")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{what}: mesh must be a Mesh, got {type(mesh).__name__}")
    grids = {m.group(1): m.group(2) for m in re.finditer(
        r"shard\.grid\s+@([\w.$-]+)\s*\(\s*shape\s*=\s*([\w?]+)\s*\)", text)}
    starts = [m.start() for m in re.finditer(r"(?<![!\w.])shard\.sharding\b", text)]
    if len(starts) != 1:
        raise ValueError(f"{what}: expected one 'shard.sharding' op, found {len(starts)}")
    t = _Tokens(text, starts[0], what)
    t.expect("shard.sharding")
    grid = t.next("a grid symbol like @grid0")
    if not grid.startswith("@"):
        raise t.fail("a grid symbol like @grid0")
    if grid[1:] in grids:
        want = "x".join(map(str, mesh.shape))
        if grids[grid[1:]] != want:
            raise ValueError(f"{what}: shard.grid {grid} has shape {grids[grid[1:]]}, the "
                             f"mesh is {want}")
    t.expect("split_axes")
    t.expect("=")
    t.expect("[")
    split: list[list[int]] = []
    while t.peek() != "]":
        split.append(t.int_list(f"split_axes[{len(split)}]"))
        if t.peek() == ",":
            t.next(",")
        elif t.peek() != "]":
            t.next("',' or ']' in split_axes")
            raise t.fail("',' or ']' in split_axes")
    t.expect("]")
    kw: dict[str, list[int]] = {}
    while t.peek() not in (None, ":"):
        name = t.next("an attribute")
        if name not in ("halo_sizes", "sharded_dims_offsets") or name in kw:
            raise t.fail("'halo_sizes', 'sharded_dims_offsets', ':' or the end"
                         + (f" ({name} given twice)" if name in kw else ""))
        t.expect("=")
        kw[name] = t.int_list(name)
    if t.peek() == ":":
        t.next(":")
        if t.next("'!shard.sharding'") != "!shard.sharding":
            raise t.fail("'!shard.sharding'")
    if t.peek() is not None and not t.peek().startswith("%"):
        t.next("the end")
        raise t.fail("the end of the shard.sharding op")
    for d, axes in enumerate(split):
        for a in axes:
            if not 0 <= a < mesh.ndim:
                raise ValueError(f"{what}: split_axes[{d}] names mesh axis {a}, out of range "
                                 f"[0, {mesh.ndim}) for mesh {mesh}")
    return split, kw


def check_mesh_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what}: mesh_name {name!r} is not an MLIR symbol name "
                         f"(letters, digits, _ $ . -; not starting with a digit)")
    return name


def mlir_ints(v: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(i)) for i in v) + "]"


def to_mlir(s: Sharding, mesh_name: str = "mesh") -> str:
    """The ``shard.sharding`` op of seed 003 (bind it with ``%s = ... : !shard.sharding``
    in a module). Partial shardings have no ``shard.sharding`` form.

    >>> from meshtensor import Sharding
    >>> to_mlir(Sharding(Mesh([2, 2]), [[1], [0]], halo_sizes=[0, 1, 2, 0]), "grid0")
    'shard.sharding @grid0 split_axes = [[1], [0]] halo_sizes = [0, 1, 2, 0]'
    """
    check_mesh_name(mesh_name, "Sharding.to_mlir")
    _refuse(s, "shard.sharding", halos=False, offsets=False)
    split = ", ".join(mlir_ints(a) for a in s.split_axes) or "[]"  # MLIR needs one sub-array
    out = f"shard.sharding @{mesh_name} split_axes = [{split}]"
    if s.halo_sizes:
        out += f" halo_sizes = {mlir_ints(s.halo_sizes)}"
    if s.sharded_dims_offsets:
        out += f" sharded_dims_offsets = {mlir_ints(s.sharded_dims_offsets)}"
    return out


# -- the seed dict ----------------------------------------------------------------------
def to_seed(s: Sharding) -> dict[str, int | None]:
    """The seed form ``{"x": d0, "y": None}``: each mesh axis -> the tensor dim it splits.

    >>> from meshtensor import Sharding
    >>> to_seed(Sharding(Mesh({"x": 2, "y": 2}), [[], ["x", "y"]]))
    {'x': 1, 'y': 1}
    """
    _refuse(s, "the seed dict")
    out: dict[str, int | None] = {n: None for n in s.mesh.axis_names}
    for d, axes in enumerate(s.split_axes):
        if list(axes) != sorted(axes):
            raise ValueError(f"the seed dict: dim {d} is split by mesh axes "
                             f"{_axis_names(s, axes)} (outer to inner); the seed dict "
                             f"splits a dim by its axes in mesh-axis order only")
        for a in axes:
            out[s.mesh.axis_names[a]] = d
    return out


__all__ = ["partition_spec_split", "to_partition_spec", "placements_fields", "to_placements",
           "mlir_fields", "to_mlir", "to_seed"]
