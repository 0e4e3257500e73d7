"""Shapes and the rules that cut a dim into shards: a global shape checked, the
ceil-div rule every sharding uses (``chunk_bounds``) and DTensor's nested chunks
(``nested_chunk_bounds``). :mod:`meshtensor.sharding` builds its regions on them, and
:mod:`meshtensor.forms` compares DTensor's layout with ours; both re-use, never
re-derive, these bounds.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .mesh import _is_int


def chunk_bounds(n: int, k: int) -> np.ndarray:
    """The ``k + 1`` boundaries of the ceil-div rule: shard ``i`` of a dim of size ``n``
    split ``k`` ways covers ``[min(i*c, n), min((i+1)*c, n))`` with ``c = ceil(n/k)``.

    Shards past the data are empty and start at ``n`` (as ``torch.chunk`` / DTensor).

    >>> chunk_bounds(10, 4).tolist()
    [0, 3, 6, 9, 10]
    >>> chunk_bounds(2, 3).tolist()
    [0, 1, 2, 2]
    """
    c = -(-n // k)
    return np.minimum(np.arange(k + 1, dtype=np.int64) * c, n)


def nested_chunk_bounds(n: int, ks: Sequence[int]) -> np.ndarray:
    """The ``prod(ks) + 1`` boundaries of nested chunking, as PyTorch DTensor cuts a dim
    sharded by several mesh axes: ``chunk_bounds`` by ``ks[0]``, then each chunk by
    ``ks[1]``, and so on (a ``torch.chunk`` of a chunk). Equals ``chunk_bounds(n,
    prod(ks))`` when the sizes divide.

    >>> nested_chunk_bounds(6, [2, 2]).tolist()      # flat rule: [0, 2, 4, 6, 6]
    [0, 2, 3, 5, 6]
    """
    bounds = np.array([0, n], dtype=np.int64)
    for k in ks:
        lo, length = bounds[:-1], np.diff(bounds)
        c = -(-length // k)
        cut = np.minimum(np.arange(k, dtype=np.int64)[None, :] * c[:, None], length[:, None])
        bounds = np.append((lo[:, None] + cut).reshape(-1), n)
    return bounds


def _shape_tuple(global_shape: Sequence[int], what: str) -> tuple[int, ...]:
    if isinstance(global_shape, (int, np.integer)):
        global_shape = (global_shape,)
    try:
        shape = tuple(global_shape)
    except TypeError:
        raise TypeError(f"{what}: global_shape must be a sequence of ints, got "
                        f"{global_shape!r}") from None
    for d, n in enumerate(shape):
        if not _is_int(n):
            raise TypeError(f"{what}: global_shape[{d}] must be an int, got {n!r}")
        if n < 0:
            raise ValueError(f"{what}: global_shape[{d}] must be >= 0, got {n}")
    return tuple(int(n) for n in shape)
