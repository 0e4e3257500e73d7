"""Text that fits a width: the command line's output and drawings stay within 80
columns (or the terminal's width), wrapping or abbreviating instead of overflowing.

``pack`` lays out pieces of a line (``"bytes 768"``, ``"link bytes 2560"``) greedily,
breaking between pieces before it breaks inside one; ``cut`` abbreviates with ``…``.
"""

from __future__ import annotations

import textwrap
from typing import Sequence

#: The width of text output unless told otherwise (a terminal's classic width).
DEFAULT_WIDTH = 80
#: The narrowest width text output is laid out for (a layout drawing needs two mesh
#: columns, an ellipsis column and the axis labels).
MIN_WIDTH = 40


def cut(text: str, width: int) -> str:
    """``text`` in ``width`` columns: cut with an ellipsis, never silently.

    >>> cut("mesh axis data_parallel (0)", 12)
    'mesh axis d…'
    """
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def pack(pieces: Sequence[str], width: int, *, indent: str = "", sep: str = " ",
         first: str | None = None) -> list[str]:
    """Lines of at most ``width`` columns holding ``pieces`` in order, joined by ``sep``
    on a line and starting a new line (prefixed by ``indent``) where the next piece
    does not fit. The first line starts with ``first`` (default ``indent``). A piece
    longer than a whole line is wrapped at its spaces (or cut into chunks where it has
    none), so nothing is lost.

    >>> pack(["bytes 768", "link bytes 2560", "busiest link 192"], 30, indent="  ", sep="   ")
    ['  bytes 768   link bytes 2560', '  busiest link 192']
    >>> pack(["total:", "bytes_moved 16,", "lower bound 16"], 80)
    ['total: bytes_moved 16, lower bound 16']
    """
    line = indent if first is None else first
    lines: list[str] = []
    fresh = True  # nothing but the prefix on ``line`` yet
    for piece in pieces:
        if not fresh and len(line) + len(sep) + len(piece) <= width:
            line += sep + piece
            continue
        if not fresh:
            lines.append(line)
            line = indent
        room = max(width - max(len(line), len(indent)), 1)
        chunks = (textwrap.wrap(piece, room, break_on_hyphens=False) or [""]
                  if len(piece) > room else [piece])
        for chunk in chunks[:-1]:  # full lines; the last chunk stays open for more
            lines.append(line + chunk)
            line = indent
        line += chunks[-1]
        fresh = False
    return lines + [line]


def wrap(text: str, width: int, *, indent: str = "") -> list[str]:
    """``text`` wrapped at its spaces into lines of at most ``width`` columns, later
    lines prefixed by ``indent`` (leading spaces of ``text`` are kept).

    >>> print("\\n".join(wrap("  step 1  gather(mesh_axes=['x'], gather_axis=0)", 40,
    ...                       indent=" " * 10)))
      step 1  gather(mesh_axes=['x'],
              gather_axis=0)
    """
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, drop_whitespace=True,
                         break_on_hyphens=False) or [text[:width]]


__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "cut", "pack", "wrap"]
