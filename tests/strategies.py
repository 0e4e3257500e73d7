"""Hypothesis strategies and naive references shared by the property tests."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import settings, strategies as st

from meshtensor import Mesh, Sharding

# The "slow" and "ci" profiles are registered and loaded in conftest.py.


def n_examples(default: int) -> int:
    """A property's example count: its own default, or the loaded profile's when that
    is larger (the "slow" profile)."""
    return max(default, settings.default.max_examples)


@st.composite
def meshes(draw, max_axes=4, max_devices=48):
    ndim = draw(st.integers(1, max_axes))
    shape = draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)
                 .filter(lambda s: math.prod(s) <= max_devices))
    return Mesh(shape)


@st.composite
def shapes(draw, min_rank=0, max_rank=4, max_size=6):
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.lists(st.integers(0, max_size), min_size=rank, max_size=rank)))


@st.composite
def shardings(draw, mesh, rank, partial=False, halos=False, offsets=False, shape=None):
    """A random sharding of a rank-``rank`` tensor: every mesh axis splits some dim (in a
    random order) or not; optionally partial axes, halos or explicit offsets."""
    order = draw(st.permutations(range(mesh.ndim)))
    split = [[] for _ in range(rank)]
    unused = []
    for a in order:
        d = draw(st.sampled_from([None] + list(range(rank))))
        if d is None:
            unused.append(a)
        else:
            split[d].append(a)
    kw = {}
    if partial and unused and draw(st.booleans()):
        p_axes = draw(st.lists(st.sampled_from(unused), min_size=1, unique=True))
        kw["partial"] = {a: draw(st.sampled_from(["sum", "max", "min", "prod"])) for a in p_axes[:1]}
        kind = kw["partial"][p_axes[0]]
        kw["partial"] = {a: kind for a in p_axes}
    n_split = sum(1 for s in split if s)
    use_offsets = offsets and shape is not None and n_split and draw(st.booleans())
    if halos and n_split and not use_offsets and draw(st.booleans()):
        kw["halo_sizes"] = draw(st.lists(st.integers(0, 2), min_size=2 * n_split,
                                         max_size=2 * n_split))
    if use_offsets:
        offs = []
        for d, axes in enumerate(split):
            if axes:
                k = math.prod(mesh.shape[a] for a in axes)
                cuts = sorted(draw(st.lists(st.integers(0, shape[d]), min_size=k - 1,
                                            max_size=k - 1)))
                offs += [0] + cuts + [shape[d]]
        kw["sharded_dims_offsets"] = offs
    return Sharding(mesh, split, **kw)


@st.composite
def cases(draw, **kw):
    mesh = draw(meshes())
    shape = draw(shapes())
    s = draw(shardings(mesh, len(shape), shape=shape, **kw))
    return mesh, shape, s


def groups_naive(mesh: Mesh, axes) -> list[list[int]]:
    """Device groups by the definition: same coordinates outside ``axes``; in-group
    order lexicographic over the coordinates on ``axes`` as listed."""
    groups: dict[tuple, list] = {}
    for dev in range(mesh.size):
        c = mesh.multi_index(dev)
        key = tuple(c[a] for a in range(mesh.ndim) if a not in axes)
        groups.setdefault(key, []).append((tuple(c[a] for a in axes), dev))
    return [[d for _, d in sorted(g)] for g in groups.values()]


def piece(a: np.ndarray, axis: int, k: int, i: int) -> np.ndarray:
    n = a.shape[axis]
    c = -(-n // k)
    lo, hi = min(i * c, n), min((i + 1) * c, n)
    return np.take(a, np.arange(lo, hi), axis=axis)


def partial_terms(x: np.ndarray, s: Sharding, rng: np.random.Generator):
    """A MeshArray laid out as the partial sharding ``s`` whose terms are random on EVERY
    device of each partial group and reduce (``s.partial_kind``) exactly to ``x``.

    Per cell, one random member of the group is the "anchor": sum: every other member
    holds a random integer and the anchor the rest; max (min): the others hold the value
    minus (plus) a random 1..5, the anchor the value; prod: the others hold a random
    +-1, the anchor the value times their product. Integers only, so reductions are exact.
    """
    from meshtensor import MeshArray, distribute
    m = s.mesh
    base = distribute(x, s.replace(partial=None))
    terms = [np.array(v) for v in base.locals]
    groups = m.group_array(s.partial_axes)
    for g in groups.tolist():
        value = np.asarray(base.locals[g[0]])
        anchor = rng.integers(0, len(g), size=value.shape)
        acc = np.zeros_like(value) if s.partial_kind == "sum" else np.ones_like(value)
        for pos, d in enumerate(g):
            if s.partial_kind == "sum":
                t = rng.integers(-5, 6, size=value.shape).astype(value.dtype)
                acc = acc + np.where(anchor == pos, 0, t)
            elif s.partial_kind == "max":
                t = value - rng.integers(1, 6, size=value.shape).astype(value.dtype)
            elif s.partial_kind == "min":
                t = value + rng.integers(1, 6, size=value.shape).astype(value.dtype)
            else:
                t = rng.choice(np.array([-1, 1], dtype=value.dtype), size=value.shape)
                acc = acc * np.where(anchor == pos, 1, t)
            terms[d] = np.where(anchor == pos, value, t)
        for pos, d in enumerate(g):  # the anchors complete the reduction
            if s.partial_kind == "sum":
                terms[d] = np.where(anchor == pos, value - acc, terms[d])
            elif s.partial_kind == "prod":
                terms[d] = np.where(anchor == pos, value * acc, terms[d])
    return MeshArray.from_locals(m, terms, sharding=s, global_shape=x.shape)
