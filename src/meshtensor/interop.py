"""Conversions between :class:`Sharding` and the layouts of JAX, PyTorch DTensor and MLIR.

Each form says less than a ``Sharding`` can; a sharding the other side cannot express
raises ``ValueError`` naming what is missing (halos, offsets, partial axes, an axis
order). These functions are the ``Sharding`` methods (``Sharding.from_partition_spec``,
``to_placements``, ``from_mlir``, ``to_seed``, ...) and ``ReshardPlan.to_mlir`` as
plain functions; the readers and writers themselves live in :mod:`meshtensor.forms`
(below ``Sharding``, which builds on them) and the plan's MLIR in
:mod:`meshtensor.resharding.printer`. torch and jax are imported only when their
objects are needed, so ``import meshtensor`` stays light.

    form                      partial   halos   offsets   several axes on a dim
    JAX PartitionSpec         no        no      no        yes, any order
    DTensor placements        yes (*)   no      nested    mesh-axis order only
    MLIR shard.sharding       no        yes     yes       yes, any order
    seed dict                 no        no      no        mesh-axis order only

    (*) sum, max, min and prod; DTensor's "avg" and bitwise ops have no counterpart.
"""

from __future__ import annotations

from typing import Any, Sequence

from .forms import to_mlir, to_partition_spec, to_placements, to_seed
from .mesh import Mesh
from .resharding.printer import plan_to_mlir
from .sharding import Sharding


def from_partition_spec(mesh: Mesh, spec: Any, ndim: int | None = None) -> Sharding:
    """A sharding from a JAX ``PartitionSpec`` or a plain tuple with one entry per dim:
    ``None``, a mesh axis name, or a tuple of names (outer to inner); as
    :meth:`Sharding.from_partition_spec`.

    >>> m = Mesh({"x": 2, "y": 2})
    >>> from_partition_spec(m, ("y", None, ("x",))).spec()
    [['y'], [], ['x']]
    >>> from_partition_spec(m, (("x", "y"),), ndim=2) == Sharding(m, [["x", "y"]])
    True
    """
    return Sharding.from_partition_spec(mesh, spec, ndim)


def from_placements(mesh: Mesh, placements: Sequence[Any], ndim: int,
                    global_shape: Sequence[int] | None = None) -> Sharding:
    """A sharding from DTensor placements, one per mesh axis (torch objects or their
    text ``"S(0)"``, ``"R"``, ``"P(sum)"``; DTensor's exact nested layout given
    ``global_shape``); as :meth:`Sharding.from_placements`.

    >>> m = Mesh({"x": 2, "y": 2})
    >>> from_placements(m, ["S(1)", "S(0)"], 2).spec()
    [['y'], ['x']]
    >>> s = from_placements(m, ["S(0)", "S(0)"], 1, global_shape=(6,))
    >>> s.dim_bounds((6,), 0).tolist()     # torch.chunk(6, 2) then each chunk in 2
    [0, 2, 3, 5, 6]
    """
    return Sharding.from_placements(mesh, placements, ndim, global_shape)


def from_mlir(text: str, mesh: Mesh) -> Sharding:
    """A sharding from MLIR's ``shard.sharding`` op (seed 003); as
    :meth:`Sharding.from_mlir`.

    >>> m = Mesh([2, 2])
    >>> from_mlir("shard.sharding @grid0 split_axes = [[], [0]] halo_sizes = [1, 2]", m)
    Sharding(Mesh({'x': 2, 'y': 2}), [[], ['x']], halo_sizes=[1, 2])
    """
    return Sharding.from_mlir(text, mesh)


__all__ = ["from_partition_spec", "to_partition_spec", "from_placements", "to_placements",
           "from_mlir", "to_mlir", "plan_to_mlir", "to_seed"]
