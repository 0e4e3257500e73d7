"""The built-in GEMM algorithms: the ONE list of their names, kinds and one-line
descriptions. The kernels (``meshtensor.tilelang.kernels.gemm``), the performance
model's comparison, ``meshtensor demo`` and ``meshtensor profile`` all read it; this
module imports nothing heavy, so the command line can list the names without TileLang.

>>> [a.name for a in GEMM_ALGORITHMS if a.tiled]
['summa_comm', 'cannon_comm', 'splitk_comm']
>>> COMM_ALGORITHMS
('summa_comm', 'cannon_comm', 'ksplit_comm', 'splitk_comm', 'cannon25d_comm')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GemmAlgorithm", "GEMM_ALGORITHMS", "ALGORITHM_NAMES", "GLOBAL_VIEW_ALGORITHMS",
           "COMM_ALGORITHMS", "TILED_ALGORITHMS", "algorithm"]


@dataclass(frozen=True)
class GemmAlgorithm:
    """One built-in GEMM: its ``name``, whether it is a distributed-memory kernel
    (``comm``: its data moves between cores through comm ops) or a global-view one,
    whether it takes ``tiles`` (``(bm, bn, bk)``: a C block held per core and a K
    panel) or ``copies`` (2.5D: the mesh cut into that many layers, each holding a
    copy of C), both searched by ``profile --compare``, and a ``summary``."""

    name: str
    comm: bool
    tiled: bool
    summary: str
    copies: bool = False


GEMM_ALGORITHMS: tuple[GemmAlgorithm, ...] = (
    GemmAlgorithm("summa_comm", True, True,
                  "SUMMA: panels broadcast along rows (A) and columns (B)"),
    GemmAlgorithm("cannon_comm", True, True,
                  "Cannon: a skew, then tiles rotated along rows and columns"),
    GemmAlgorithm("ksplit_comm", True, False,
                  "K split over the mesh columns, partial C row panels reduce-scattered"),
    GemmAlgorithm("splitk_comm", True, True,
                  "P-way split-K: K split over all P cores, C reduce-scattered"),
    GemmAlgorithm("cannon25d_comm", True, False,
                  "2.5D: c layers each run Cannon on a K/c slice, C summed over layers",
                  copies=True),
    GemmAlgorithm("local", False, False, "global view: A by rows, B by columns, no reads "
                                         "of other shards"),
    GemmAlgorithm("summa", False, False, "global view: SUMMA's reads of other shards"),
    GemmAlgorithm("cannon", False, False, "global view: Cannon's order of the same reads"),
)
ALGORITHM_NAMES = tuple(a.name for a in GEMM_ALGORITHMS)
COMM_ALGORITHMS = tuple(a.name for a in GEMM_ALGORITHMS if a.comm)
GLOBAL_VIEW_ALGORITHMS = tuple(a.name for a in GEMM_ALGORITHMS if not a.comm)
TILED_ALGORITHMS = tuple(a.name for a in GEMM_ALGORITHMS if a.tiled)


def algorithm(name: str) -> GemmAlgorithm:
    """The algorithm called ``name``; ``ValueError`` listing the names.

    >>> algorithm("summa_comm").tiled
    True
    >>> algorithm("gemm3d")
    Traceback (most recent call last):
    ...
    ValueError: unknown GEMM algorithm 'gemm3d'; choose one of summa_comm, cannon_comm, ksplit_comm, splitk_comm, cannon25d_comm, local, summa, cannon
    """
    for a in GEMM_ALGORITHMS:
        if a.name == name:
            return a
    raise ValueError(f"unknown GEMM algorithm {name!r}; choose one of "
                     f"{', '.join(ALGORITHM_NAMES)}")
