"""Kernel parameters that are distributed tensors (SUNMMIO's ``T.MeshTensor``): inside
the kernel a parameter has one core's slot shape; the caller passes the global tensor.

:class:`MeshParam` is the typed record of one such parameter (global shape, slot shape,
:class:`meshtensor.Sharding`, dtype, the layout and placement the kernel named). The
records travel with the kernel, in its function attribute :data:`ATTR` (as TileLang's
passes read their ``tl.*`` attributes and the upstream its ``tensor_meta``): the
language layer writes it when the kernel is built (:func:`with_mesh_params`), passes
read it with :func:`mesh_params`. :meth:`MeshParam.scatter` and :meth:`MeshParam.gather`
move between the global tensor and the per-core stack ``(cores, *slot_shape)`` the
lowered kernel takes: cells of a slot past the core's part are zero going in and dropped
coming out, and the copies of a replicated tensor must agree coming out.

>>> import tilelang
>>> from meshtensor import Mesh, Sharding
>>> mesh = Mesh({"row": 2, "col": 2})
>>> p = MeshParam("A", (5, 4), Sharding(mesh, [["row"], ["col"]]), "float32")
>>> p.shard_shape
(3, 2)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
from tvm import tirx

from ...mesh import Mesh
from ...sharding import Sharding

__all__ = ["MeshParam", "mesh_params", "with_mesh_params", "ATTR", "MX_PARAMS", "SPLITS",
           "balanced_bounds", "split_sharding", "bind_symbols"]

#: the function attribute holding a kernel's ``T.MeshTensor`` records, by parameter name
ATTR = "meshtensor.mesh_params"
#: ``[[elements index, scales index], ...]``: the two parameters of each MX
#: ``T.MeshTensor``, which the caller passes as one ``(elements, scales)`` pair
MX_PARAMS = "meshtensor.mx_params"


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
    #: ints, or the kernel's symbolic sizes (``T.dynamic``): a name, or ``"m*4+0"`` for
    #: ``a * m + b`` (:func:`affine_dim`): such a record is bound to the caller's sizes
    #: (:meth:`bind`) when it runs
    global_shape: tuple[int | str, ...]
    sharding: Sharding
    dtype: str
    layout: str | None = None
    policy: str = ""
    #: each core's slot, when the kernel states it (else the sharding's tile shape)
    local_shape: tuple[int, ...] | None = None
    #: the ``rank_placement=`` the kernel named, as text (recorded; multi-chip kernels
    #: split over ranks first)
    rank_placement: str | None = None
    #: the cores that run a block of the kernel's launch (``None``: all): another core
    #: never touches its copy, so only these copies of a replicated output count
    running: tuple[int, ...] | None = None
    #: how uneven sizes split (:data:`SPLITS`) and whether a dim split over both mesh
    #: axes runs over all cores in linear order: what :meth:`bind` needs to place a
    #: symbolic tensor once its sizes are known
    split: str = "balanced"
    line: bool = False

    @property
    def mesh(self) -> Mesh:
        return self.sharding.mesh

    @property
    def symbols(self) -> tuple[str, ...]:
        """The names of the symbolic sizes in :attr:`global_shape`, in dim order."""
        return tuple(affine_dim(d)[0] for d in self.global_shape if isinstance(d, str))

    def bind(self, sizes: Mapping[str, int]) -> "MeshParam":
        """This record for the caller's sizes (``{name: int}`` for every symbol): the
        global shape, its split over the mesh and each core's slot (every split dim
        ceil-divided, as the kernel's buffer computes it).

        >>> m = Mesh({"row": 2, "col": 2})
        >>> p = MeshParam("A", ("m", 4), Sharding(m, [["row"], []]), "float32")
        >>> b = p.bind({"m": 5})
        >>> b.global_shape, b.shard_shape, b.regions()[0][:, 0].tolist()
        ((5, 4), (3, 4), [0, 0, 3, 3])
        """
        if not self.symbols:
            return self
        shape = tuple(_value(d, sizes) if isinstance(d, str) else int(d)
                      for d in self.global_shape)
        axes = [list(a) for a in self.sharding.spec()]
        axes += [[] for _ in range(len(shape) - len(axes))]
        sharding = split_sharding(self.mesh, shape, axes, self.line, self.split)
        slot = tuple(-(-n // int(np.prod([self.mesh.shape[self.mesh.axis_names.index(a)]
                                           for a in names], dtype=np.int64)))
                     if names else n for n, names in zip(shape, axes))
        return replace(self, global_shape=shape, sharding=sharding, local_shape=slot)

    @property
    def shard_shape(self) -> tuple[int, ...]:
        """The per-core shape the kernel sees (every split dim ceil-divided)."""
        if self.local_shape is not None:
            return tuple(self.local_shape)
        return self.sharding.tile_shape(self.global_shape)

    def named(self, name: str) -> "MeshParam":
        """This record for a parameter called ``name``."""
        return replace(self, name=name)

    def run_by(self, cores: tuple[int, ...] | None) -> "MeshParam":
        """This record for a launch whose blocks run on ``cores`` only."""
        return replace(self, running=None if cores is None else tuple(int(c) for c in cores))

    def to_attr(self, index: int) -> dict[str, Any]:
        """The record as function-attribute data (``index``: its parameter position)."""
        s = self.sharding
        return {"index": int(index), "global_shape": [_dim(v) for v in self.global_shape],
                "local_shape": [_dim(v) for v in (self.local_shape if self.symbols
                                                  else self.shard_shape)],
                "split": self.split, "line": bool(self.line),
                "mesh_axes": list(s.mesh.axis_names),
                "mesh_shape": [int(v) for v in s.mesh.shape],
                "split_axes": [[str(a) for a in axes] for axes in s.spec()],
                "offsets": [int(v) for v in s.sharded_dims_offsets],
                "dtype": self.dtype, "layout": self.layout or "", "policy": self.policy,
                "rank_placement": self.rank_placement or ""}

    @classmethod
    def from_attr(cls, name: str, data: Mapping[str, Any]) -> "MeshParam":
        """The record :meth:`to_attr` wrote (values come back as TVM objects)."""
        mesh = Mesh({str(a): int(n) for a, n in zip(data["mesh_axes"], data["mesh_shape"])})
        split = [[str(a) for a in axes] for axes in data["split_axes"]]
        offsets = [int(v) for v in data["offsets"]] or None
        return cls(name, tuple(_dim_of(v) for v in data["global_shape"]),
                   Sharding(mesh, split, sharded_dims_offsets=offsets), str(data["dtype"]),
                   str(data["layout"]) or None, str(data["policy"]),
                   tuple(_dim_of(v) for v in data["local_shape"]),
                   str(data["rank_placement"]) or None, None,
                   str(data.get("split", "balanced")), bool(data.get("line", False)))

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
        the tensor and the cores whose copies differ (only the copies of the
        :attr:`running` cores count; a region no running core holds is left as it
        was)."""
        starts, stops = self.regions()
        owner: dict[tuple, int] = {}
        for c in (range(self.mesh.size) if self.running is None else self.running):
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


#: how uneven sizes split: the upstream's balanced rule, or the older fork's ceil blocks
SPLITS = ("balanced", "ceil")


def balanced_bounds(n: int, k: int) -> np.ndarray:
    """The ``k + 1`` boundaries of the balanced split of ``n`` into ``k`` parts: the
    first ``n % k`` parts get ``n // k + 1`` elements, the others ``n // k``.

    >>> balanced_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    """
    base, rem = divmod(int(n), int(k))
    counts = np.full(k, base, dtype=np.int64)
    counts[:rem] += 1
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def split_sharding(mesh: Mesh, shape: Sequence[int], split_axes: Sequence[Sequence[str]],
                   line: bool = False, split: str = "balanced") -> Sharding:
    """The :class:`Sharding` of a tensor of ``shape`` whose dim ``d`` splits over the
    mesh axes ``split_axes[d]``: under ``split="ceil"`` in ceil blocks (a dim over two
    axes as one line of all cores), under ``"balanced"`` the first ``D % k`` parts one
    element more, a dim over two axes split over the first axis, then each part over
    the second (``line``: over all cores in linear order instead).

    >>> m = Mesh({"row": 2, "col": 2})
    >>> split_sharding(m, (5,), [["row", "col"]], line=True).dim_bounds((5,), 0).tolist()
    [0, 2, 3, 4, 5]
    """
    if split not in SPLITS:
        raise ValueError(f"placement: split must be one of {list(SPLITS)}, got {split!r}")
    axes = [list(a) for a in split_axes]
    if split == "ceil" or all(not a for a in axes):
        return Sharding(mesh, axes)   # the ceil rule (and a shared dim as one line)
    offsets: list[int] = []
    for d, names in enumerate(axes):
        if not names:
            continue
        n = int(shape[d])
        ks = [mesh.shape[mesh.axis_names.index(a)] for a in names]
        if len(ks) == 1 or line:
            bounds = balanced_bounds(n, int(np.prod(ks)))
        else:  # the first axis, then each of its parts over the second
            outer = balanced_bounds(n, ks[0])
            parts = [outer[r] + balanced_bounds(int(outer[r + 1] - outer[r]), ks[1])[:-1]
                     for r in range(ks[0])]
            bounds = np.concatenate(parts + [[n]])
        offsets.extend(int(b) for b in bounds)
    return Sharding(mesh, axes, sharded_dims_offsets=offsets)


def affine_dim(text: str) -> tuple[str, int, int]:
    """A symbolic dim of a record, ``(size, a, b)``: the dim is ``a * size + b`` (``"m"``
    is ``("m", 1, 0)``; ``"m*4+0"`` is ``("m", 4, 0)``: the upstream's ``m * nrows``).

    >>> affine_dim("m"), affine_dim("k*4+0"), affine_dim("n*2-1")
    (('m', 1, 0), ('k', 4, 0), ('n', 2, -1))
    """
    m = re.fullmatch(r"(\w+)(?:\*(\d+)([+-]\d+))?", text)
    if m is None:
        raise ValueError(f"MeshParam: dim {text!r} is not a size nor a * size + b")
    return m.group(1), int(m.group(2) or 1), int(m.group(3) or 0)


def _value(text: str, sizes: Mapping[str, int]) -> int:
    name, a, b = affine_dim(text)
    return a * int(sizes[name]) + b


def _dim(v: Any) -> int | str:
    return v if isinstance(v, str) else int(v)


def _dim_of(v: Any) -> int | str:
    """A dim read back from a function attribute: an int, or a symbol's name (text)."""
    try:
        return int(v)
    except (TypeError, ValueError):
        return str(v)


def bind_symbols(mesh_tensors: Sequence[tuple[int, "MeshParam", bool]], args: Sequence[Any],
                 passed: Sequence[str] = ()
                 ) -> tuple[tuple[tuple[int, "MeshParam", bool], ...], list[int]]:
    """A call's ``T.MeshTensor`` records bound to the sizes of its global tensors, and
    the values of the symbolic sizes named in ``passed`` (the scalar arguments the
    compiled kernel takes after its own, in that order). A size is read from the
    first tensor that has it as a dim; every other one must agree (``ValueError``
    naming both).

    >>> m = Mesh({"row": 2, "col": 2})
    >>> p = MeshParam("A", ("m", 4), Sharding(m, [["row"], []]), "float32")
    >>> import torch
    >>> bound, values = bind_symbols([(0, p, False)], [torch.zeros(6, 4)], ["m"])
    >>> bound[0][1].global_shape, values
    ((6, 4), [6])
    """
    sizes: dict[str, tuple[int, str]] = {}
    for i, p, _ in mesh_tensors:
        if not p.symbols:
            continue
        t = args[i] if i < len(args) else None
        shape = getattr(t, "shape", None)
        what = f"T.MeshTensor parameter {p.name!r} (argument {i})"
        if shape is None or len(shape) != len(p.global_shape):
            raise ValueError(f"{what}: expected a global tensor of {len(p.global_shape)} "
                             f"dims {tuple(p.global_shape)}, got "
                             f"{type(t).__name__ if shape is None else tuple(shape)}")
        for d, text in enumerate(p.global_shape):
            if not isinstance(text, str):
                continue
            name, a, b = affine_dim(text)
            n = int(shape[d])
            if (n - b) % a or n < b:
                raise ValueError(f"{what}: its dim {d} is {text}, which no size {name!r} "
                                 f"makes {n} (a multiple of {a}, plus {b}, is needed)")
            n = (n - b) // a
            seen = sizes.setdefault(name, (n, f"{what} dim {d}"))
            if seen[0] != n:
                form = "" if text == name else f" in {text}"
                raise ValueError(f"{what}: its dim {d} is the size {name!r}{form}, which is "
                                 f"{seen[0]} in {seen[1]} but {n} here")
    if not sizes:
        return tuple(mesh_tensors), []
    values = {k: v for k, (v, _) in sizes.items()}
    bound = tuple((i, p.bind(values), w) for i, p, w in mesh_tensors)
    return bound, [values[str(k)] for k in passed]


def _box(lo: np.ndarray, hi: np.ndarray, zero: bool = False) -> tuple[slice, ...]:
    """Slices of the box ``[lo, hi)`` (``zero``: shifted to start at the origin)."""
    if zero:
        return tuple(slice(0, int(b - a)) for a, b in zip(lo, hi))
    return tuple(slice(int(a), int(b)) for a, b in zip(lo, hi))


def _torch_dtype(dtype: str) -> Any:
    import torch
    name = str(dtype)
    if name == "float4_e2m1fn":  # torch has none: one code a byte (ml_dtypes' .view)
        return torch.uint8
    t = getattr(torch, name, None)
    if not isinstance(t, torch.dtype):
        raise ValueError(f"T.MeshTensor: dtype {name!r} has no torch equivalent")
    return t


def with_mesh_params(func: tirx.PrimFunc, params: Mapping[int, MeshParam]
                     ) -> tirx.PrimFunc:
    """``func`` with the records of its ``T.MeshTensor`` parameters (``{parameter index:
    MeshParam}``) in its :data:`ATTR` attribute, named after their buffers."""
    if not params:
        return func
    data = {}
    for i, p in params.items():
        buf = func.buffer_map[func.params[i]]
        data[str(buf.name)] = p.named(str(buf.name)).to_attr(i)
    return func.with_attr(ATTR, data)


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
    data = func.attrs.get(ATTR) if func.attrs is not None else None
    if not data:
        return {}
    names = {str(func.buffer_map[v].name): i for i, v in enumerate(func.params)
             if v in func.buffer_map}
    out = {}
    for name, rec in data.items():
        i = names.get(str(name), int(rec["index"]))
        out[i] = MeshParam.from_attr(str(name), rec)
    return dict(sorted(out.items()))
