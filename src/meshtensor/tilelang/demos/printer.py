"""Output of the demos in a fixed width: prose wrapped at spaces, preformatted lines
(kernel text, tables laid out by :func:`meshtensor.text.columns`) continued on
indented lines."""

from __future__ import annotations

from typing import Iterable

from ...text import DEFAULT_WIDTH, MIN_WIDTH, cut, wrap


class Printer:
    """Prints within ``width`` columns (at least 40).

    >>> p = Printer(40)
    >>> p.say("every core loads only its own tiles of A and B from global memory")
    every core loads only its own tiles of A
    and B from global memory
    """

    def __init__(self, width: int = DEFAULT_WIDTH):
        if isinstance(width, bool) or not isinstance(width, int) or width < MIN_WIDTH:
            raise ValueError(f"demo: width must be an int >= {MIN_WIDTH}, got {width!r}")
        self.width = width

    def say(self, text: str = "", indent: str = "") -> None:
        """Prose: wrapped at spaces, continuation lines prefixed by ``indent``; leading
        newlines are blank lines."""
        rest = text.lstrip("\n")
        for _ in range(len(text) - len(rest)):
            print()
        if rest or not text:
            print("\n".join(wrap(rest, self.width, indent=indent)))

    def block(self, lines: Iterable[str] | str) -> None:
        """Preformatted lines (a table, kernel text): a long one continues on the next
        lines, indented four more columns (at spaces, or cut where it has none)."""
        if isinstance(lines, str):
            lines = lines.splitlines()
        for line in lines:
            lead = " " * (len(line) - len(line.lstrip(" ")))
            for part in wrap(line, self.width, indent=lead + "    "):
                print(cut(part, self.width))
