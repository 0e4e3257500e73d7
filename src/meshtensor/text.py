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


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1.

    >>> plural(1, "superstep"), plural(3, "superstep")
    ('1 superstep', '3 supersteps')
    """
    return f"{n} {word}{'s' * (n != 1)}"


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


def fit(message: str, width: int = DEFAULT_WIDTH) -> str:
    """An error message in lines of at most ``width`` columns: each longer line
    wrapped at its spaces, the rest of it indented two more spaces than its start
    (a word longer than a line stays whole).

    >>> print(fit("T.dist.put (dist op #1): its source must use shared.rsram or "
    ...           "global/DRAM, got 'shared.wsram'", 40))
    T.dist.put (dist op #1): its source must
      use shared.rsram or global/DRAM, got
      'shared.wsram'
    """
    out: list[str] = []
    for line in message.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + "  ",
                             break_on_hyphens=False, break_long_words=False) or [line]
    return "\n".join(out)


def fitted(error: BaseException) -> BaseException:
    """``error`` with its message :func:`fit` to the default width (in place: its type
    and traceback stay)."""
    if error.args and isinstance(error.args[0], str):
        error.args = (fit(error.args[0]),) + error.args[1:]
    return error


def columns(headers: Sequence[str], rows: Sequence[Sequence[object]], width: int, *,
            key: int = 1, left: Sequence[int] = (0,), gap: int = 2) -> list[str]:
    """A table of ``rows`` under ``headers`` in at most ``width`` columns: where all
    columns do not fit, the columns after the first ``key`` ones are split into blocks
    that fit, each printed with the key columns again (a blank line between blocks).
    Columns listed in ``left`` are left-aligned, the others right-aligned; a key column
    wider than the whole width is cut with an ellipsis.

    >>> print("\\n".join(columns(["core", "a", "b", "c"], [["(0, 0)", 1, 22, 333]], 16)))
    core    a   b
    (0, 0)  1  22
    <BLANKLINE>
    core      c
    (0, 0)  333
    """
    cells = [[str(h) for h in headers]] + [[str(v) for v in r] for r in rows]
    n = len(headers)
    colw = [max(len(row[c]) for row in cells) for c in range(n)]
    keys = list(range(min(key, n)))
    keyw = sum(colw[c] + gap for c in keys)
    if keyw > width // 2:  # key columns too wide: cut them to half the width
        scale = (width // 2) / max(keyw, 1)
        for c in keys:
            colw[c] = max(int(colw[c] * scale) - gap, 4)
        keyw = sum(colw[c] + gap for c in keys)
    blocks: list[list[int]] = [[]]
    used = keyw
    for c in range(len(keys), n):
        if blocks[-1] and used + colw[c] > width:
            blocks.append([])
            used = keyw
        blocks[-1].append(c)
        used += colw[c] + gap
    out: list[str] = []
    for b, block in enumerate(blocks):
        if b:
            out.append("")
        for row in cells:
            parts = []
            for c in keys + block:
                v = cut(row[c], colw[c])
                parts.append(v.ljust(colw[c]) if c in left else v.rjust(colw[c]))
            out.append((" " * gap).join(parts).rstrip())
    return out


__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "columns", "cut", "pack", "wrap"]
