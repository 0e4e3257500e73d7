"""Drawings of layouts and plans: text (box-drawing characters) and PNG (matplotlib).

``visualize(sharding, shape)`` draws the mesh with its axis arrows and, in each
device's cell, the global region of its core (or its local values). Cells that hold
the same region (replicas) carry the same shard letter, so replication reads at a
glance; halos, empty shards and partial terms are spelled out in the cell.
"""

from __future__ import annotations

import textwrap
from typing import Any, Sequence

import numpy as np

from .mesh import Mesh
from .sharding import Sharding
from .text import DEFAULT_WIDTH, MIN_WIDTH, cut, pack, wrap

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _letter(i: int) -> str:
    return _LETTERS[i] if i < len(_LETTERS) else f"#{i}"


def _ranges(lo: Sequence[int], hi: Sequence[int]) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in zip(lo, hi)) + "]"


def _value_lines(a: np.ndarray, width: int = 24) -> list[str]:
    """A local array as text rows; rank > 2 shows its leading index per 2-D slice."""
    if a.size == 0:
        return [f"empty {a.shape}"]
    if a.ndim == 0:
        return [f"{a.item():g}" if a.dtype.kind == "f" else str(a.item())]

    def row(v: np.ndarray) -> str:
        items = [f"{x:g}" if a.dtype.kind == "f" else str(x) for x in v.tolist()]
        s = " ".join(items)
        return cut(s, width)

    if a.ndim == 1:
        return [row(a)]
    if a.ndim == 2:
        return [row(r) for r in a]
    out = []
    for idx in np.ndindex(a.shape[:-2]):
        out.append(f"[{', '.join(map(str, idx))}, :, :]")
        out += [row(r) for r in a[idx]]
    return out


def _shard_ids(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, int]:
    """Per device, the index of its core region among the distinct non-empty regions,
    numbered in order of first appearance (replicas share one), or -1 where the region
    is empty; and how many distinct non-empty regions there are."""
    if starts.shape[1] == 0:  # a scalar: one region, every device holds it
        return np.zeros(len(starts), dtype=np.int64), 1
    empty = np.any(stops <= starts, axis=1)
    ids = np.full(len(starts), -1, dtype=np.int64)
    if empty.all():
        return ids, 0
    _, first, inv = np.unique(np.concatenate([starts, stops], axis=1)[~empty], axis=0,
                              return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    ids[~empty] = rank[inv.reshape(-1)]
    return ids, len(first)


def shards_line(s: Sharding, global_shape: Sequence[int]) -> str:
    """The drawing's second line: how many distinct non-empty shards there are, on how
    many devices each, and how many devices hold an empty shard (those get no letter).

    >>> shards_line(Sharding(Mesh([4]), [[0]]), (2,))
    '2 distinct shards (letters), one per device; 2 of 4 devices hold an empty shard (no letter)'
    >>> shards_line(Sharding(Mesh([2, 2]), [[1]]), (4,))
    "2 distinct shards (letters), each on 2 devices (replicated along ['x'])"
    """
    shape = s.check_shape(global_shape, "shards_line")
    shard, n = _shard_ids(*s.regions(shape))
    return _shards_line(s, shape, shard, n)


def _shards_line(s: Sharding, shape: tuple[int, ...], shard: np.ndarray, n: int) -> str:
    mesh = s.mesh
    if n == 0:
        return (f"every device's shard is empty: the tensor {shape} has no elements")
    names = mesh.axis_names
    # A non-empty region belongs to one shard index per split dim, so it sits on every
    # device of the axes that split nothing: the same count for every letter.
    split = {a for d in range(len(shape)) for a in s.axes_of(d)}
    per = int(np.prod([mesh.shape[a] for a in range(mesh.ndim) if a not in split],
                      dtype=np.int64))
    line = f"{n} distinct shard{'s' * (n != 1)} (letter{'s' * (n != 1)})"
    if per > 1:
        how = []
        if s.replicated_axes:
            how.append(f"replicated along {[names[a] for a in s.replicated_axes]}")
        if s.partial_axes:
            how.append(f"{s.partial_kind} terms along {[names[a] for a in s.partial_axes]}")
        line += f", each on {per} devices ({'; '.join(how)})"
    else:
        line += ", one per device"
    empty = int(np.count_nonzero(shard < 0))
    if empty:
        line += (f"; {empty} of {mesh.size} device{'s' * (mesh.size != 1)} "
                 f"{'hold' if empty != 1 else 'holds'} an empty shard (no letter)")
    return line


def _cells(s: Sharding, shape: tuple[int, ...], values: Any, devices: Sequence[int]
           ) -> tuple[dict[int, list[str]], list[str]]:
    """The lines of the cells of ``devices``; and the legend lines (for the whole mesh)."""
    mesh = s.mesh
    starts, stops = s.regions(shape)
    w0, w1 = s.windows(shape)
    shard, n_shards = _shard_ids(starts, stops)
    cells: dict[int, list[str]] = {}
    locals_ = None
    if values is not None:
        from .mesh_array import MeshArray, distribute
        arr = values if isinstance(values, MeshArray) else distribute(np.asarray(values), s)
        locals_ = arr.locals
    for d in devices:
        empty = bool(shard[d] < 0)
        lines = [f"{mesh.multi_index(d)}" + ("" if empty else f" {_letter(int(shard[d]))}")]
        if locals_ is not None:
            lines += _value_lines(np.asarray(locals_[d]))
        elif empty:
            lines.append("empty " + _ranges(starts[d], stops[d]))
        else:
            lines.append(_ranges(starts[d], stops[d]) if shape else "scalar")
        if s.halo_sizes and locals_ is None:
            lines.append("halo " + _ranges(w0[d], w1[d]))
        if s.partial_axes:
            c = mesh.multi_index(d)
            term = int(np.ravel_multi_index([c[a] for a in s.partial_axes],
                                            [mesh.shape[a] for a in s.partial_axes]))
            k = int(np.prod([mesh.shape[a] for a in s.partial_axes]))
            lines.append(f"{s.partial_kind} term {term}/{k}")
        cells[d] = lines
    # "\n" marks where a line too long for the width breaks first (see visualize)
    legend = [f"tensor {shape} over mesh {mesh} {dict(zip(mesh.axis_names, mesh.shape))},\n"
              f"sharding {s.spec()} = {s}"]
    line = _shards_line(s, shape, shard, n_shards)
    legend.append(line)
    if s.halo_sizes:
        legend.append("halo: the global range the local array covers (outside the tensor: zeros)")
    return cells, legend


#: Text drawings show at most this many mesh rows (and blocks of a 3-D mesh); larger
#: meshes show the first and last ones with an ellipsis row between.
MAX_ROWS = 8
#: The narrowest grid: two mesh columns of 4 characters with an ellipsis column between
#: (``MIN_WIDTH`` leaves room for it and the mesh axis labels).
_MIN_GRID = 2 * (4 + 3) + 4 + 1


def _visible(n: int, fit: int) -> list[int | None]:
    """Indices ``0..n-1`` to draw when only ``fit`` slots exist: the first and last ones
    with ``None`` (an ellipsis) between."""
    if n <= fit:
        return list(range(n))
    fit = max(fit, 3)
    head = (fit - 1 + 1) // 2
    tail = fit - 1 - head
    return list(range(head)) + [None] + list(range(n - tail, n))


def _fit_columns(room: int, cols: int, need: int) -> tuple[int, list[int | None]]:
    """Cell width and the mesh columns to draw (``None``: an ellipsis column) for a grid
    of at most ``room + 1`` columns whose cells' longest line is ``need``: every column
    if each gets ``min(need, 12)`` characters, else the first and last ones."""
    if room // cols - 3 >= min(need, 12):  # every column fits
        return max(min(max(need, 14), room // cols - 3), 4), list(range(cols))
    width = max(min(need, (room - 1 - 4) // 2 - 3), 4)  # at least two columns
    fit = max((room - 1 - 4) // (width + 3), 2)  # data columns beside the ellipsis
    # _visible(n, k) keeps k - 1 columns and the ellipsis when n > k, all n otherwise
    return width, _visible(cols, fit + 1 if cols > fit + 1 else fit)


def _grid(cells: dict[int, list[str]], rows: int, cols: int, width: int,
          show_rows: list[int | None] | None = None,
          show_cols: list[int | None] | None = None) -> list[str]:
    """Cells (row-major) as a box-drawing grid, each ``width`` wide; only the rows and
    columns listed (``None``: an ellipsis row or column)."""
    show_rows = list(range(rows)) if show_rows is None else show_rows
    show_cols = list(range(cols)) if show_cols is None else show_cols
    widths = [width if c is not None else 1 for c in show_cols]
    height = max(len(c) for c in cells.values())
    top = "┌" + "┬".join("─" * (w + 2) for w in widths) + "┐"
    mid = "├" + "┼".join("─" * (w + 2) for w in widths) + "┤"
    bot = "└" + "┴".join("─" * (w + 2) for w in widths) + "┘"
    out = [top]
    for n, r in enumerate(show_rows):
        for h in range(height if r is not None else 1):
            parts = []
            for c, w in zip(show_cols, widths):
                if r is None or c is None:
                    text = "…" if h == 0 else ""
                else:
                    cell = cells[r * cols + c]
                    text = cell[h] if h < len(cell) else ""
                parts.append(" " + cut(text, w).ljust(w) + " ")
            out.append("│" + "│".join(parts) + "│")
        out.append(mid if n < len(show_rows) - 1 else bot)
    return out


def visualize(sharding: Sharding, global_shape: Sequence[int], *, values: Any = None,
              max_width: int = DEFAULT_WIDTH) -> str:
    """Draw which part of the tensor sits on which device.

    Args:
        sharding: the layout (meshes of 1 to 3 axes).
        global_shape: the tensor's shape (any rank).
        values: optional global array (or a MeshArray) whose local values to print
            instead of the regions.
        max_width: the drawing fits this many columns (at least ``MIN_WIDTH``, 40;
            default 80): text that does not fit wraps (legend) or ends in ``…``
            (cells, long axis names); a mesh too wide shows its first and last
            columns with a ``…`` column between, and meshes of more than
            ``MAX_ROWS`` rows their first and last rows (big meshes stay a screenful).

    Example:
        >>> print(visualize(Sharding(Mesh([2]), [[0]]), (4, 2)))
        tensor (4, 2) over mesh 2 {'x': 2}, sharding [['x']] = S(x)
        2 distinct shards (letters), one per device
        ┌────────────────┬────────────────┐
        │ (0,) A         │ (1,) B         │
        │ [0:2, 0:2]     │ [2:4, 0:2]     │
        └────────────────┴────────────────┘
        mesh axis x (0) ------------------>
    """
    if not isinstance(sharding, Sharding):
        raise TypeError(f"visualize: sharding must be a Sharding, got {type(sharding).__name__}")
    mesh = sharding.mesh
    if not 1 <= mesh.ndim <= 3:
        raise ValueError(f"visualize: meshes of 1 to 3 axes are drawn, this one has {mesh.ndim}")
    shape = sharding.check_shape(global_shape, "visualize")
    names = mesh.axis_names
    cols = mesh.shape[-1]
    rows = mesh.shape[-2] if mesh.ndim >= 2 else 1
    blocks = mesh.shape[0] if mesh.ndim == 3 else 1
    if isinstance(max_width, bool) or not isinstance(max_width, (int, np.integer)):
        raise TypeError(f"visualize: max_width must be an int, got {type(max_width).__name__}")
    if max_width < MIN_WIDTH:
        raise ValueError(f"visualize: max_width must be >= {MIN_WIDTH} (two mesh columns, an "
                         f"ellipsis column and the axis labels), got {max_width}")
    down = f"mesh axis {names[-2]} ({mesh.ndim - 2})" if mesh.ndim >= 2 else ""
    show_rows = _visible(rows, MAX_ROWS)
    show_blocks = _visible(blocks, 3 if blocks > 4 else blocks)
    per = rows * cols
    probe = [b * per + r * cols + c for b in show_blocks if b is not None
             for r in show_rows if r is not None for c in (0, cols - 1)]
    probe_cells, _ = _cells(sharding, shape, values, sorted(set(probe)))
    need = max(len(line) for c in probe_cells.values() for line in c)
    # The down axis's label sits right of the grid's top line; where it would cost cell
    # text or columns, it goes on a line of its own above the grid instead.
    side = cut(down, max_width - 2 - _MIN_GRID)  # a long axis name leaves the grid room
    width, show_cols = _fit_columns(max_width - (len(side) + 1 if side else 0) - 1, cols, need)
    above = False
    if down and (width < need or len(show_cols) < cols):
        w2, c2 = _fit_columns(max_width - 3, cols, need)  # room for " │" only
        if (len(c2), w2) > (len(show_cols), width):
            above, width, show_cols = True, w2, c2
    devices = [b * per + r * cols + c for b in show_blocks if b is not None
               for r in show_rows if r is not None for c in show_cols if c is not None]
    cells, legend = _cells(sharding, shape, values, devices)
    across = cut(f"mesh axis {names[-1]} ({mesh.ndim - 1})", max_width - 4) + " "
    out = [w for line in legend for w in pack(line.split("\n"), max_width)]
    if len(show_cols) < cols or len(show_rows) < rows or len(show_blocks) < blocks:
        out += textwrap.wrap(f"showing the first and last mesh rows and columns of {mesh} "
                             f"(… marks the ones left out)", max_width)
    grid_w = 0
    for b in show_blocks:
        if b is None:
            out += textwrap.wrap(f"… {blocks - len(show_blocks) + 1} more blocks along mesh "
                                 f"axis {names[0]} (0)", max_width)
            continue
        if mesh.ndim == 3:
            out.append(cut(f"mesh axis {names[0]} (0) = {b}:", max_width))
        block = {r * cols + c: cells[b * per + r * cols + c] for r in show_rows if r is not None
                 for c in show_cols if c is not None}
        g = _grid(block, rows, cols, width, show_rows, show_cols)
        grid_w = len(g[0])
        if mesh.ndim >= 2:
            n = len(g)
            for i in range(n):
                mark = "│" if 0 < i < n - 1 or (i == 0 and above) else " "
                if i == 0 and not above:
                    mark = side
                elif i == n - 1:
                    mark = "v"
                g[i] = g[i] + " " + mark
            if above:  # ends over the arrow's column
                out.append(cut(down, max_width).rjust(grid_w + 2))
        out += g
    out.append(across + "-" * max(grid_w - len(across) - 1, 2) + ">")
    return "\n".join(out)


def plan_matrix(step: Any, mesh: Mesh, bins: int | None = None) -> np.ndarray:
    """Bytes sent in one step: ``[sender, receiver]`` over linear device ids. With
    ``bins``, devices are grouped into at most ``bins`` consecutive id ranges per side
    (for pictures of big meshes)."""
    f = step.flows.as_pairs()
    n = mesh.size
    b = n if bins is None or bins >= n else bins
    src, dst = (f.src * b) // n, (f.dst * b) // n
    m = np.bincount(src * b + dst, weights=f.nbytes, minlength=b * b)
    return np.rint(m).astype(np.int64).reshape(b, b)


def visualize_plan(plan: Any, max_devices: int = 16, max_pairs: int = 12, *,
                   width: int = DEFAULT_WIDTH) -> str:
    """Which devices send how many bytes to which, per step, as text.

    Small meshes get a sender x receiver matrix per step (split into blocks of receiver
    columns where it is wider than ``width``, default 80); larger ones a summary (who
    talks, the busiest device and link) and at most ``max_pairs`` of the largest
    point-to-point copies, so the text stays short on thousands of devices.

    >>> from meshtensor import plan_reshard
    >>> m = Mesh([2])
    >>> print(visualize_plan(plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,))))
    reshard S(x) -> R on mesh 2, shape (4,): 16 bytes in 1 step (lower bound 16,
      max_link_bytes 8)
    step 1: all_gather(mesh_axes=['x'], gather_axis=0)  S(x) -> R  16 bytes
      bytes sent (row: sender, column: receiver)
               (0,)   (1,)
        (0,)      .      8
        (1,)      8      .
    """
    from .resharding.printer import step_summary
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < MIN_WIDTH:
        raise ValueError(f"visualize_plan: width must be an int >= {MIN_WIDTH}, got {width!r}")
    mesh = plan.mesh
    n = len(plan.steps)
    out = pack([f"reshard {plan.src} -> {plan.tgt}", f"on mesh {mesh},",
                f"shape {plan.global_shape}:", f"{plan.bytes_moved} bytes in {n} step"
                f"{'s' * (n != 1)}", f"(lower bound {plan.lower_bound_bytes},",
                f"max_link_bytes {plan.max_link_bytes})"], width, first="", indent="  ")
    for i, s in enumerate(plan.steps, 1):
        out += pack([f"step {i}: {s.describe()}", f"{s.before} -> {s.after}",
                     f"{s.bytes} bytes"], width, first="", indent="  ", sep="  ")
        if s.bytes == 0:
            out.append("  no communication")
            continue
        if mesh.size <= max_devices:
            labels = [str(mesh.multi_index(d)) for d in range(mesh.size)]
            out += wrap("  bytes sent (row: sender, column: receiver)", width, indent="  ")
            out += _matrix_lines(plan_matrix(s, mesh), labels, width)
            continue
        out += [w for x in step_summary(s, mesh) for w in wrap("  " + x, width, indent="    ")]
        out += wrap(f"  busiest link carries {s.flows.max_link_bytes(mesh)} bytes (XY routing)",
                    width, indent="    ")
        if s.op == "transfers":
            for src, dst, nb in s.flows.pairs(max_pairs):
                out += wrap(f"  {mesh.multi_index(src)} -> {mesh.multi_index(dst)}: {nb} bytes",
                            width, indent="    ")
    return "\n".join(out)


def _matrix_lines(m: np.ndarray, labels: list[str], width: int) -> list[str]:
    """A sender x receiver matrix (``.`` for 0), indented 2; where all receivers do not
    fit ``width``, in blocks of receiver columns of equal size, each with every sender."""
    w = max(max(len(x) for x in labels), len(str(int(m.max())))) + 1
    n = len(labels)
    fit = max((width - 2 - w) // w, 1)
    blocks = -(-n // fit)
    per = -(-n // blocks)  # the same number of columns in every block (but the last)
    out = []
    for c0 in range(0, n, per):
        cols = range(c0, min(c0 + per, n))
        if blocks > 1:
            out += wrap(f"  receivers {labels[cols[0]]} to {labels[cols[-1]]}:", width,
                        indent="    ")
        out.append("  " + " " * w + "".join(f"{labels[c]:>{w}s}" for c in cols))
        for d in range(n):
            out.append("  " + f"{labels[d]:>{w}s}" +
                       "".join(f"{(str(v) if v else '.'):>{w}s}" for v in m[d, cols.start:cols.stop]))
    return out


# -- images ------------------------------------------------------------------------------
def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("PNG output needs matplotlib: pip install 'meshtensor[viz]'") from None
    return plt


#: Pictures sample the tensor on at most this many points per side, and label mesh
#: cells with text only up to this many rows and columns (beyond, colour alone).
PNG_SAMPLES = 512
PNG_LABELS = 16


def save_png(sharding: Sharding, global_shape: Sequence[int], path: str) -> None:
    """Save a picture: the tensor coloured by owning shard (dims 0 and 1; a 1-D tensor
    is one row, higher dims are folded into the columns), each shard's halo window (the
    range its local array covers) as a dashed outline in its colour, and the mesh grid
    in the same colours, each device labelled with its shard letter (on meshes up to
    ``PNG_LABELS`` x ``PNG_LABELS``; bigger ones get colour and sparse ticks, so a 64x64
    mesh stays readable and quick)."""
    fig = _layout_figure(sharding, global_shape)
    fig.savefig(path, dpi=100)
    _plt().close(fig)


def _layout_figure(sharding: Sharding, global_shape: Sequence[int]) -> Any:
    """The figure :func:`save_png` saves."""
    plt = _plt()
    shape = sharding.check_shape(global_shape, "save_png")
    mesh = sharding.mesh
    starts, stops = sharding.regions(shape)
    shard_of, n_shards = _shard_ids(starts, stops)
    rows = shape[0] if len(shape) >= 1 else 1
    cols = shape[1] if len(shape) >= 2 else 1
    # Owner of each sampled cell: the shard whose interval holds it, per dim (boxes of
    # a sharding tile the tensor per dim, so two searchsorted calls find it).
    ys = np.unique(np.linspace(0, max(rows, 1) - 1, min(max(rows, 1), PNG_SAMPLES)).astype(np.int64))
    xs = np.unique(np.linspace(0, max(cols, 1) - 1, min(max(cols, 1), PNG_SAMPLES)).astype(np.int64))
    owner = np.full((len(ys), len(xs)), -1.0)
    reps = np.unique(shard_of, return_index=True)[1]
    if rows and cols:
        for d in reps.tolist():
            r0, r1 = (starts[d][0], stops[d][0]) if len(shape) >= 1 else (0, 1)
            c0, c1 = (starts[d][1], stops[d][1]) if len(shape) >= 2 else (0, 1)
            ri = slice(np.searchsorted(ys, r0), np.searchsorted(ys, r1))
            ci = slice(np.searchsorted(xs, c0), np.searchsorted(xs, c1))
            owner[ri, ci] = shard_of[d]
    # A qualitative palette; past 20 shards colours repeat (shard id mod 20), so
    # neighbouring shards along a mesh row or column still differ.
    n_col = min(max(n_shards, 1), 20)
    cmap = plt.get_cmap("tab20", n_col)
    owner = np.where(owner < 0, owner, owner % n_col)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    ext = (-0.5, max(cols, 1) - 0.5, max(rows, 1) - 0.5, -0.5)
    ax1.imshow(np.ma.masked_less(owner, 0), cmap=cmap, vmin=-0.5, vmax=n_col - 0.5,
               interpolation="nearest", aspect="auto", extent=ext)
    ax1.set_title(f"tensor {shape}: {sharding}" + (f"\n{n_shards} shards, colours repeat every "
                                                      f"{n_col}" if n_shards > n_col else ""))
    ax1.set_xlabel("dim 1" if len(shape) >= 2 else "")
    ax1.set_ylabel("dim 0")
    if sharding.halo_sizes and rows and cols:
        _halo_outlines(ax1, sharding, shape, shard_of, reps, cmap, n_col, rows, cols)
    if n_shards <= 64:
        for d in reps.tolist():
            if np.all(stops[d] > starts[d]):
                r = (starts[d][0] + stops[d][0] - 1) / 2 if shape else 0
                c = (starts[d][1] + stops[d][1] - 1) / 2 if len(shape) >= 2 else 0
                ax1.text(c, r, _letter(int(shard_of[d])), ha="center", va="center", fontsize=12)
    grid_rows = mesh.shape[0] if mesh.ndim >= 2 else 1
    grid = shard_of.reshape(grid_rows, -1)
    # devices whose shard is empty are left blank, as in the text drawing
    ax2.imshow(np.ma.masked_less(grid, 0) % n_col, cmap=cmap, vmin=-0.5, vmax=n_col - 0.5,
               interpolation="nearest")
    ax2.set_title(f"mesh {mesh} {mesh.axis_names}")
    if max(grid.shape) <= PNG_LABELS:
        for (r, c), v in np.ndenumerate(grid):
            ax2.text(c, r, f"{_letter(int(v)) if v >= 0 else 'empty'}\n"
                     f"{mesh.multi_index(r * grid.shape[1] + c)}",
                     ha="center", va="center", fontsize=8)
        ax2.set_xticks(range(grid.shape[1]))
        ax2.set_yticks(range(grid.shape[0]))
    else:
        step_r, step_c = -(-grid.shape[0] // 8), -(-grid.shape[1] // 8)
        ax2.set_xticks(range(0, grid.shape[1], step_c))
        ax2.set_yticks(range(0, grid.shape[0], step_r))
        ax2.set_xlabel("mesh column (last axes)")
        ax2.set_ylabel(f"mesh axis {mesh.axis_names[0]}")
    fig.tight_layout()
    return fig


def _halo_outlines(ax: Any, sharding: Sharding, shape: tuple[int, ...], shard_of: np.ndarray,
                   reps: np.ndarray, cmap: Any, n_col: int, rows: int, cols: int) -> None:
    """Each non-empty shard's halo window, clipped to the tensor, as a dashed outline in
    the shard's colour (dims 0 and 1, as the tensor panel)."""
    from matplotlib.patches import Rectangle
    w0, w1 = sharding.windows(shape)
    drawn = set()
    for d in reps.tolist():
        if shard_of[d] < 0:
            continue
        r0, r1 = (max(w0[d][0], 0), min(w1[d][0], rows)) if len(shape) >= 1 else (0, 1)
        c0, c1 = (max(w0[d][1], 0), min(w1[d][1], cols)) if len(shape) >= 2 else (0, 1)
        if (r0, r1, c0, c1) in drawn or r1 <= r0 or c1 <= c0:
            continue
        drawn.add((r0, r1, c0, c1))
        ax.add_patch(Rectangle((c0 - 0.5, r0 - 0.5), c1 - c0, r1 - r0, fill=False,
                               linestyle="--", linewidth=1.5, label="halo",
                               edgecolor=cmap(int(shard_of[d]) % n_col)))
    ax.set_title(ax.get_title() + "\ndashed: each shard's halo window", fontsize=10)


def save_plan_png(plan: Any, path: str) -> None:
    """Save a picture of a plan: one sender x receiver byte matrix per step, devices
    named by their mesh coordinates as in the text (on big meshes each pixel is a block
    of consecutive devices, its tick the first one's coordinates), the colour bar in
    bytes."""
    fig = _plan_figure(plan)
    fig.savefig(path, dpi=100)
    _plt().close(fig)


def _plan_figure(plan: Any) -> Any:
    """The figure :func:`save_plan_png` saves."""
    plt = _plt()
    steps = [s for s in plan.steps] or [None]
    mesh = plan.mesh
    n = mesh.size
    fig, axes = plt.subplots(1, len(steps), figsize=(5 * len(steps), 4.5), squeeze=False)
    for ax, s in zip(axes[0], steps):
        if s is None:
            ax.set_title("nothing to move")
            ax.axis("off")
            continue
        m = plan_matrix(s, mesh, bins=PNG_SAMPLES)
        b = len(m)
        im = ax.imshow(m, cmap="viridis", interpolation="nearest")
        per = f"; each pixel a block of ~{n / b:.3g} devices per side" if b < n else ""
        ax.set_title(f"{s.op}: {s.bytes} bytes{per}", fontsize=9)
        # ticks at (at most) 8 blocks, named by their first device's coordinates
        ticks = sorted(set(np.linspace(0, b - 1, min(b, 8)).round().astype(int).tolist()))
        labels = [str(mesh.multi_index((t * n) // b)) for t in ticks]
        ax.set_xticks(ticks, labels, rotation=90, fontsize=7)
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_xlabel("receiver (mesh coordinates)")
        ax.set_ylabel("sender (mesh coordinates)")
        bar = fig.colorbar(im, ax=ax, shrink=0.8)
        bar.set_label("bytes sent" + (" per block" if b < n else ""))
    fig.suptitle(f"{plan.src} -> {plan.tgt}, shape {plan.global_shape}")
    fig.tight_layout()
    return fig
