"""``T.dist``: SUNMMIO's multi-chip layer (ranks), not available yet.

``tm.enable`` installs this module as ``T.dist`` so that a kernel using it fails with a
``ValueError`` that says what is missing, not with a bare ``AttributeError``. Every
public name read from it raises :class:`DistNotAvailable` (a ``ValueError``; also an
``AttributeError``, so ``hasattr`` and tools that probe modules see no such name). The
multi-chip layer replaces this module.

>>> import meshtensor.tilelang.language.dist as dist
>>> dist.put
Traceback (most recent call last):
...
meshtensor.tilelang.language.dist.DistNotAvailable: T.dist.put: multi-chip kernels (SUNMMIO's T.dist, several chips running one kernel) are not available in meshtensor yet; the chip has them. Write the kernel for one chip (T.comm between its cores) for now
"""

from __future__ import annotations

__all__ = ["DistNotAvailable"]


class DistNotAvailable(ValueError, AttributeError):
    """A ``T.dist`` name read before multi-chip kernels are available."""


def __getattr__(name: str) -> None:  # noqa: N807 (module hook)
    if name.startswith("_") or name.startswith("pytest"):
        raise AttributeError(name)
    raise DistNotAvailable(f"T.dist.{name}: multi-chip kernels (SUNMMIO's T.dist, several chips "
                     f"running one kernel) are not available in meshtensor yet; the chip has "
                     f"them. Write the kernel for one chip (T.comm between its cores) for now")
