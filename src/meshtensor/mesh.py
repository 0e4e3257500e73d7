"""The device mesh: an immutable grid of devices with named axes.

A device is named by its coordinates (a tuple, one entry per mesh axis) or by its
linear index, which is row-major over the coordinates (axis 0 outermost), so on a
2-D mesh ``core_id = row * ncols + col``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence, Union

import numpy as np

AxisLike = Union[int, str]
DeviceLike = Union[int, Sequence[int]]

#: Named mesh targets (mesh accelerators) and their axis sizes.
TARGETS: dict[str, dict[str, int]] = {
    "a4e": {"x": 4, "y": 4},
    "a4e-lite": {"x": 2, "y": 4},
}


def target_list() -> str:
    """The named targets and their meshes, for messages and help.

    >>> target_list()
    'a4e: 4x4, a4e-lite: 2x4'
    """
    return ", ".join(f"{name}: {'x'.join(map(str, sizes.values()))}"
                     for name, sizes in sorted(TARGETS.items()))


def default_axis_names(ndim: int) -> tuple[str, ...]:
    """``x``, ``y``, ``z``, then ``a3``, ``a4``, ...

    >>> default_axis_names(4)
    ('x', 'y', 'z', 'a3')
    """
    base = ("x", "y", "z")
    return tuple(base[i] if i < 3 else f"a{i}" for i in range(ndim))


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@lru_cache(maxsize=256)
def _coords(shape: tuple[int, ...]) -> np.ndarray:
    c = np.indices(shape, dtype=np.int64).reshape(len(shape), -1).T.copy()
    c.flags.writeable = False
    return c


@dataclass(frozen=True, slots=True, init=False)
class Mesh:
    """An n-dimensional grid of devices.

    Args:
        shape: axis sizes, as a sequence of ints or an ordered mapping
            ``{"x": 4, "y": 4}`` (mapping order is axis order).
        axis_names: names of the axes; defaults to ``x, y, z, a3, ...``. Not allowed
            together with a mapping ``shape``.

    ``size`` is the number of devices.

    Example:
        >>> m = Mesh({"x": 2, "y": 3})
        >>> m.size, m.linear_index((1, 2)), m.multi_index(4)
        (6, 5, (1, 1))
        >>> m.device_groups(["y"])
        [[0, 1, 2], [3, 4, 5]]
    """

    shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    #: Number of devices (stored: planners ask for it on every call).
    size: int = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __init__(self, shape: Sequence[int] | Mapping[str, int],
                 axis_names: Sequence[str] | None = None) -> None:
        if isinstance(shape, Mapping):
            if axis_names is not None:
                raise ValueError("Mesh: give axis names either as the keys of a mapping "
                                 "shape or as axis_names, not both")
            axis_names = list(shape.keys())
            sizes = list(shape.values())
        elif isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise TypeError(f"Mesh: shape must be a sequence of ints or a mapping "
                            f"axis name -> size, got {type(shape).__name__} {shape!r}")
        else:
            sizes = list(shape)
        for i, s in enumerate(sizes):
            if not _is_int(s):
                raise TypeError(f"Mesh: size of axis {i} must be an int, got "
                                f"{type(s).__name__} {s!r}")
            if s < 1:
                raise ValueError(f"Mesh: size of axis {i} must be >= 1, got {s}")
        if axis_names is None:
            names = default_axis_names(len(sizes))
        else:
            names = tuple(axis_names)
            if len(names) != len(sizes):
                raise ValueError(f"Mesh: {len(names)} axis names {names} for "
                                 f"{len(sizes)} axes")
            for n in names:
                if not isinstance(n, str) or not n:
                    raise TypeError(f"Mesh: axis names must be non-empty strings, got {n!r}")
            if len(set(names)) != len(names):
                raise ValueError(f"Mesh: duplicated axis name in {names}")
        object.__setattr__(self, "shape", tuple(int(s) for s in sizes))
        object.__setattr__(self, "axis_names", names)
        object.__setattr__(self, "size", math.prod(self.shape))
        object.__setattr__(self, "_hash", hash((self.shape, names)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # rebuild through the constructor: string hashes differ between processes
        return Mesh, (self.shape, self.axis_names)

    @classmethod
    def from_target(cls, target: str) -> "Mesh":
        """The mesh of a named target: ``"a4e"`` (4x4) or ``"a4e-lite"`` (2x4).

        >>> Mesh.from_target("a4e").shape
        (4, 4)
        """
        if target not in TARGETS:
            raise ValueError(f"Mesh.from_target: unknown target {target!r}; known "
                             f"targets: {sorted(TARGETS)}")
        return cls(TARGETS[target])

    @classmethod
    def parse(cls, text: str) -> "Mesh":
        """A mesh from ``"4x4"``, ``"2x3x2"`` or a target name.

        >>> Mesh.parse("2x3").shape
        (2, 3)
        """
        if text in TARGETS:
            return cls.from_target(text)
        parts = text.lower().split("x")
        if not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"Mesh.parse: expected sizes like '4x4' or a target "
                             f"({target_list()}), got {text!r}")
        return cls([int(p) for p in parts])

    # -- derived facts -------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of mesh axes."""
        return len(self.shape)

    @property
    def as_dict(self) -> dict[str, int]:
        """``{axis name: size}`` in axis order."""
        return dict(zip(self.axis_names, self.shape))

    @property
    def coords(self) -> np.ndarray:
        """``coords[linear_index]`` is the coordinate row of that device, shape ``(size, ndim)``."""
        return _coords(self.shape)

    def axis_index(self, axis: AxisLike, *, what: str = "Mesh") -> int:
        """The integer index of a mesh axis given by index or name.

        >>> Mesh({"x": 2, "y": 2}).axis_index("y")
        1
        """
        if isinstance(axis, str):
            if axis not in self.axis_names:
                raise ValueError(f"{what}: unknown mesh axis {axis!r}; mesh axes are "
                                 f"{list(self.axis_names)}")
            return self.axis_names.index(axis)
        if not _is_int(axis):
            raise TypeError(f"{what}: a mesh axis is an int or a name, got "
                            f"{type(axis).__name__} {axis!r}")
        if not 0 <= axis < self.ndim:
            raise ValueError(f"{what}: mesh axis {axis} out of range [0, {self.ndim})")
        return int(axis)

    def axes_indices(self, axes: Iterable[AxisLike], *, what: str = "Mesh") -> tuple[int, ...]:
        """Integer indices of a list of mesh axes; a repeated axis is an error."""
        if isinstance(axes, (str, int, np.integer)):
            axes = [axes]
        out = tuple(self.axis_index(a, what=what) for a in axes)
        if len(set(out)) != len(out):
            raise ValueError(f"{what}: mesh axis repeated in mesh_axes {list(axes)}")
        return out

    def linear_index(self, coords: DeviceLike) -> int:
        """Row-major linear index of a device (an int passes through after a range check).

        >>> Mesh([2, 3]).linear_index((1, 0))
        3
        """
        if _is_int(coords):
            if not 0 <= coords < self.size:
                raise ValueError(f"Mesh: device {coords} out of range [0, {self.size})")
            return int(coords)
        c = tuple(coords)
        if len(c) != self.ndim:
            raise ValueError(f"Mesh: device coordinates {c} have {len(c)} entries, "
                             f"mesh has {self.ndim} axes")
        idx = 0
        for a, (ci, s) in enumerate(zip(c, self.shape)):
            if not _is_int(ci) or not 0 <= ci < s:
                raise ValueError(f"Mesh: coordinate {ci!r} on mesh axis "
                                 f"{self.axis_names[a]!r} out of range [0, {s})")
            idx = idx * s + int(ci)
        return idx

    def multi_index(self, linear: DeviceLike) -> tuple[int, ...]:
        """Coordinates of a device given by linear index (coordinates pass through).

        >>> Mesh([2, 3]).multi_index(5)
        (1, 2)
        """
        return tuple(int(c) for c in self.coords[self.linear_index(linear)])

    def device_groups(self, mesh_axes: Iterable[AxisLike]) -> list[list[int]]:
        """Devices grouped for a collective over ``mesh_axes``.

        Devices that agree on every axis not in ``mesh_axes`` form a group; inside a
        group devices are ordered row-major over their coordinates on ``mesh_axes`` in
        the listed order (first listed is outermost). Groups are ordered row-major over
        the remaining axes.

        >>> Mesh([2, 2]).device_groups([1, 0])
        [[0, 2, 1, 3]]
        """
        return self.group_array(self.axes_indices(mesh_axes, what="device_groups")).tolist()

    def group_array(self, axes: tuple[int, ...]) -> np.ndarray:
        """Like :meth:`device_groups` for validated integer axes, as an int array
        ``(num_groups, group_size)``."""
        rest = tuple(a for a in range(self.ndim) if a not in axes)
        ids = np.arange(self.size, dtype=np.int64).reshape(self.shape)
        gsize = int(np.prod([self.shape[a] for a in axes], dtype=np.int64))
        return ids.transpose(rest + tuple(axes)).reshape(-1, gsize)

    def in_group_index(self, axes: tuple[int, ...]) -> np.ndarray:
        """For each device, its position inside its group over ``axes``."""
        pos = np.zeros(self.size, dtype=np.int64)
        for a in axes:
            pos = pos * self.shape[a] + self.coords[:, a]
        return pos

    def __repr__(self) -> str:
        return f"Mesh({self.as_dict!r})"

    def __str__(self) -> str:
        return "x".join(str(s) for s in self.shape)
