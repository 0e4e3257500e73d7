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
        return s if len(s) <= width else s[:width - 3] + "..."

    if a.ndim == 1:
        return [row(a)]
    if a.ndim == 2:
        return [row(r) for r in a]
    out = []
    for idx in np.ndindex(a.shape[:-2]):
        out.append(f"[{', '.join(map(str, idx))}, :, :]")
        out += [row(r) for r in a[idx]]
    return out


def _cells(s: Sharding, shape: tuple[int, ...], values: Any) -> tuple[list[list[str]], list[str]]:
    """Per device, the lines of its cell; and the legend lines."""
    mesh = s.mesh
    starts, stops = s.regions(shape)
    w0, w1 = s.windows(shape)
    keys: dict[tuple, int] = {}
    cells = []
    locals_ = None
    if values is not None:
        from .mesh_array import MeshArray, distribute
        arr = values if isinstance(values, MeshArray) else distribute(np.asarray(values), s)
        locals_ = arr.locals
    for d in range(mesh.size):
        key = tuple(starts[d]) + tuple(stops[d])
        letter = _letter(keys.setdefault(key, len(keys)))
        head = f"{mesh.multi_index(d)} {letter}"
        lines = [head]
        empty = bool(np.any(stops[d] <= starts[d])) and len(shape) > 0
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
        cells.append(lines)
    legend = [f"tensor {shape} over mesh {mesh} {dict(zip(mesh.axis_names, mesh.shape))}, "
              f"sharding {s.spec()} = {s}"]
    n_shards = len(keys)
    per = mesh.size // n_shards if n_shards else 0
    names = mesh.axis_names
    line = f"{n_shards} distinct shards (letters)"
    if per > 1:
        how = []
        if s.replicated_axes:
            how.append(f"replicated along {[names[a] for a in s.replicated_axes]}")
        if s.partial_axes:
            how.append(f"{s.partial_kind} terms along {[names[a] for a in s.partial_axes]}")
        line += f", each on {per} devices ({'; '.join(how)})"
    else:
        line += ", one per device"
    legend.append(line)
    if s.halo_sizes:
        legend.append("halo: the global range the local array covers (outside the tensor: zeros)")
    return cells, legend


def _grid(cells: list[list[str]], rows: int, cols: int, width: int) -> list[str]:
    """Cells (row-major) as a box-drawing grid, each ``width`` wide."""
    height = max(len(c) for c in cells)
    top = "┌" + "┬".join("─" * (width + 2) for _ in range(cols)) + "┐"
    mid = "├" + "┼".join("─" * (width + 2) for _ in range(cols)) + "┤"
    bot = "└" + "┴".join("─" * (width + 2) for _ in range(cols)) + "┘"
    out = [top]
    for r in range(rows):
        for h in range(height):
            parts = []
            for c in range(cols):
                cell = cells[r * cols + c]
                text = cell[h] if h < len(cell) else ""
                parts.append(" " + text[:width].ljust(width) + " ")
            out.append("│" + "│".join(parts) + "│")
        out.append(mid if r < rows - 1 else bot)
    return out


def visualize(sharding: Sharding, global_shape: Sequence[int], *, values: Any = None,
              max_width: int = 120) -> str:
    """Draw which part of the tensor sits on which device.

    Args:
        sharding: the layout (meshes of 1 to 3 axes).
        global_shape: the tensor's shape (any rank).
        values: optional global array (or a MeshArray) whose local values to print
            instead of the regions.
        max_width: cell text is cut so the drawing fits this many columns.

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
    cells, legend = _cells(sharding, shape, values)
    names = mesh.axis_names
    cols = mesh.shape[-1]
    rows = mesh.shape[-2] if mesh.ndim >= 2 else 1
    down = f"mesh axis {names[-2]} ({mesh.ndim - 2})" if mesh.ndim >= 2 else ""
    room = max_width - (len(down) + 1 if down else 0) - 1  # the side arrow's label
    need = max(len(line) for c in cells for line in c)
    width = max(min(max(need, 14), room // cols - 3), 4)
    grid_w = (width + 3) * cols + 1
    across = f"mesh axis {names[-1]} ({mesh.ndim - 1}) "
    out = [w for line in legend for w in textwrap.wrap(line, max_width)]
    per = rows * cols
    blocks = mesh.shape[0] if mesh.ndim == 3 else 1
    for b in range(blocks):
        if mesh.ndim == 3:
            out.append(f"mesh axis {names[0]} (0) = {b}:")
        g = _grid(cells[b * per:(b + 1) * per], rows, cols, width)
        if mesh.ndim >= 2:
            n = len(g)
            for i in range(n):
                mark = "│" if 0 < i < n - 1 else " "
                if i == 0:
                    mark = down
                elif i == n - 1:
                    mark = "v"
                g[i] = g[i] + " " + mark
        out += g
    out.append(across + "-" * max(grid_w - len(across) - 1, 2) + ">")
    return "\n".join(out)


def plan_matrix(step: Any, mesh: Mesh) -> np.ndarray:
    """Bytes sent in one step: ``[sender, receiver]`` over linear device ids."""
    f = step.flows
    m = np.zeros((mesh.size, mesh.size), dtype=np.int64)
    np.add.at(m, (f.src, f.dst), f.nbytes)
    return m


def visualize_plan(plan: Any, max_devices: int = 16) -> str:
    """Which devices send how many bytes to which, per step, as text.

    Small meshes get a sender x receiver matrix per step; larger ones the busiest pairs.

    >>> from meshtensor import plan_reshard
    >>> m = Mesh([2])
    >>> print(visualize_plan(plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,))))
    reshard S(x) -> R on mesh 2, shape (4,): 16 bytes in 1 step (lower bound 16)
    step 1: all_gather(mesh_axes=['x'], gather_axis=0)  S(x) -> R  16 bytes
      bytes sent (row: sender, column: receiver)
               (0,)   (1,)
        (0,)      .      8
        (1,)      8      .
    """
    mesh = plan.mesh
    out = [f"reshard {plan.src} -> {plan.tgt} on mesh {mesh}, shape {plan.global_shape}: "
           f"{plan.bytes_moved} bytes in {len(plan.steps)} step{'s' * (len(plan.steps) != 1)} "
           f"(lower bound {plan.lower_bound_bytes})"]
    for i, s in enumerate(plan.steps, 1):
        out.append(f"step {i}: {s.describe()}  {s.before} -> {s.after}  {s.bytes} bytes")
        if s.bytes == 0:
            out.append("  no communication")
            continue
        m = plan_matrix(s, mesh)
        if mesh.size <= max_devices:
            labels = [str(mesh.multi_index(d)) for d in range(mesh.size)]
            w = max(max(len(x) for x in labels), len(str(int(m.max())))) + 1
            out.append("  bytes sent (row: sender, column: receiver)")
            out.append("  " + " " * w + "".join(f"{x:>{w}s}" for x in labels))
            for d in range(mesh.size):
                out.append("  " + f"{labels[d]:>{w}s}" +
                           "".join(f"{(str(v) if v else '.'):>{w}s}" for v in m[d]))
        else:
            for src, dst, nb in s.flows.pairs()[:12]:
                out.append(f"  {mesh.multi_index(src)} -> {mesh.multi_index(dst)}: {nb} bytes")
    return "\n".join(out)


# -- images ------------------------------------------------------------------------------
def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("PNG output needs matplotlib: pip install 'meshtensor[viz]'") from None
    return plt


def save_png(sharding: Sharding, global_shape: Sequence[int], path: str) -> None:
    """Save a picture: the tensor coloured by owning shard (dims 0 and 1; a 1-D tensor
    is one row, higher dims are folded into the columns) and the mesh grid in the same
    colours, each device labelled with its shard letter."""
    plt = _plt()
    shape = sharding.check_shape(global_shape, "save_png")
    mesh = sharding.mesh
    starts, stops = sharding.regions(shape)
    keys: dict[tuple, int] = {}
    shard_of = np.array([keys.setdefault(tuple(starts[d]) + tuple(stops[d]), len(keys))
                         for d in range(mesh.size)])
    rows = shape[0] if len(shape) >= 1 else 1
    cols = shape[1] if len(shape) >= 2 else 1
    owner = np.full((max(rows, 1), max(cols, 1)), -1.0)
    for d in np.unique(shard_of, return_index=True)[1]:
        r0, r1 = (starts[d][0], stops[d][0]) if len(shape) >= 1 else (0, 1)
        c0, c1 = (starts[d][1], stops[d][1]) if len(shape) >= 2 else (0, 1)
        owner[r0:r1, c0:c1] = shard_of[d]
    cmap = plt.get_cmap("tab20", max(len(keys), 1))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    ax1.imshow(np.ma.masked_less(owner, 0), cmap=cmap, vmin=-0.5, vmax=len(keys) - 0.5,
               interpolation="nearest", aspect="auto")
    ax1.set_title(f"tensor {shape}: {sharding}")
    ax1.set_xlabel("dim 1" if len(shape) >= 2 else "")
    ax1.set_ylabel("dim 0")
    for k, idx in keys.items():
        d = int(np.flatnonzero(shard_of == idx)[0])
        if np.all(stops[d] > starts[d]):
            r = (starts[d][0] + stops[d][0] - 1) / 2 if shape else 0
            c = (starts[d][1] + stops[d][1] - 1) / 2 if len(shape) >= 2 else 0
            ax1.text(c, r, _letter(idx), ha="center", va="center", fontsize=12)
    grid_rows = mesh.shape[0] if mesh.ndim >= 2 else 1
    grid = shard_of.reshape(grid_rows, -1)
    ax2.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(keys) - 0.5, interpolation="nearest")
    ax2.set_title(f"mesh {mesh} {mesh.axis_names}")
    for (r, c), v in np.ndenumerate(grid):
        ax2.text(c, r, f"{_letter(int(v))}\n{mesh.multi_index(r * grid.shape[1] + c)}",
                 ha="center", va="center", fontsize=8)
    ax2.set_xticks(range(grid.shape[1]))
    ax2.set_yticks(range(grid.shape[0]))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def save_plan_png(plan: Any, path: str) -> None:
    """Save a picture of a plan: one sender x receiver byte matrix per step."""
    plt = _plt()
    steps = [s for s in plan.steps] or [None]
    fig, axes = plt.subplots(1, len(steps), figsize=(5 * len(steps), 4.5), squeeze=False)
    for ax, s in zip(axes[0], steps):
        if s is None:
            ax.set_title("nothing to move")
            ax.axis("off")
            continue
        m = plan_matrix(s, plan.mesh)
        im = ax.imshow(m, cmap="viridis", interpolation="nearest")
        ax.set_title(f"{s.op}: {s.bytes} bytes", fontsize=9)
        ax.set_xlabel("receiver (linear id)")
        ax.set_ylabel("sender (linear id)")
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"{plan.src} -> {plan.tgt}, shape {plan.global_shape}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
