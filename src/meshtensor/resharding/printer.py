"""A plan in words: ``ReshardPlan.explain()``'s state chain, the per-step summaries of
big meshes (also in ``visualize_plan``), and the plan as MLIR ``shard`` dialect ops
(``ReshardPlan.to_mlir``). Reads plans and steps; builds nothing but text.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..cost import GroupFlows
from ..forms import check_mesh_name, mlir_ints, to_mlir
from ..mesh import Mesh, _is_int
from ..sharding import Sharding
from ..text import DEFAULT_WIDTH, MIN_WIDTH, pack, wrap

#: Meshes up to this many devices list device pairs in ``explain()``; larger ones get
#: per-step summaries (groups, busiest device, busiest link) and the top pairs.
EXPLAIN_ALL_PAIRS_UP_TO = 64


def explain(plan: Any, max_pairs: int = 12, *, width: int = DEFAULT_WIDTH) -> str:
    """The text of :meth:`ReshardPlan.explain`."""
    if not _is_int(max_pairs) or max_pairs < 0:
        raise ValueError(f"ReshardPlan.explain: max_pairs must be an int >= 0, got "
                         f"{max_pairs!r}")
    if not _is_int(width) or width < MIN_WIDTH:
        raise ValueError(f"ReshardPlan.explain: width must be an int >= "
                         f"{MIN_WIDTH}, got {width!r}")
    m = plan.mesh
    step_in, more_in = " " * 10, " " * 12
    lines = pack([f"reshard {plan.src} -> {plan.tgt}", f"on mesh {m} {m.axis_names},",
                  f"shape {plan.global_shape},", f"{plan.itemsize} B/element"],
                 width, first="", indent="  ")
    if not plan.steps:
        lines += wrap("  nothing to do: source and target are the same", width,
                      indent="  ")
    big = m.size > EXPLAIN_ALL_PAIRS_UP_TO
    for i, s in enumerate(plan.steps, 1):
        f = s.flows
        lines += wrap(f"  step {i}  {s.describe()}", width, indent=step_in)
        lines += pack([f"{s.before} -> {s.after}", f"bytes {s.bytes}",
                       f"link bytes {f.link_bytes(m)}",
                       f"busiest link {f.max_link_bytes(m)}"], width, indent=step_in,
                      sep="   ")
        if big:
            lines += [w for x in step_summary(s, m)
                      for w in wrap(step_in + x, width, indent=more_in)]
        if s.bytes == 0:
            continue
        if big and isinstance(f, GroupFlows):
            continue  # the summary says who talks; listing k*(k-1) pairs would not
        pairs = f.pairs(max_pairs + 1)
        for src, dst, nb in pairs[:max_pairs]:
            lines += wrap(f"{step_in}{m.multi_index(src)} -> {m.multi_index(dst)}   {nb} B",
                          width, indent=more_in)
        if len(pairs) > max_pairs:
            lines += wrap(f"{step_in}... {f.num_pairs() - max_pairs} more device pairs",
                          width, indent=more_in)
    ratio = (plan.bytes_moved / plan.lower_bound_bytes) if plan.lower_bound_bytes else 1.0
    total_in = " " * 9
    lines += pack([f"total: bytes_moved {plan.bytes_moved},",
                   f"lower bound {plan.lower_bound_bytes} (ratio {ratio:.2f}),",
                   f"max_link_bytes {plan.max_link_bytes}"], width, first="  ",
                  indent=total_in)
    lines += pack([f"link bytes {plan.link_bytes},",
                   f"busiest device receives {plan.max_device_bytes}"], width,
                  indent=total_in)
    return "\n".join(lines)


def step_summary(s: Any, m: Mesh) -> list[str]:
    """One or two lines on who talks in a step, without listing pairs."""
    f = s.flows
    if s.bytes == 0:
        return []
    got = f.received(m)
    busiest = int(np.argmax(got))
    out = []
    if isinstance(f, GroupFlows):
        names = [m.axis_names[a] for a in f.axes]
        out.append(f"{f.groups.shape[0]} groups of {f.k} devices along {names}")
    else:
        out.append(f"{len(f)} copies between {f.num_pairs()} device pairs")
    out.append(f"{int((got > 0).sum())} of {m.size} devices receive; busiest "
               f"{m.multi_index(busiest)} receives {int(got[busiest])} B")
    return out


_ELEMENT_TYPES = {1: "i8", 2: "f16", 4: "f32", 8: "f64"}
_MLIR_REDUCTION = {"sum": "sum", "max": "max", "min": "min", "prod": "product"}


def _local_type(s: Sharding, shape: tuple[int, ...], elt: str) -> str:
    """MLIR's per-device tensor type: the tile shape (ceil-div, as MLIR's shard shape),
    halos included."""
    dims = list(s.tile_shape(shape))
    for d in s.split_dims:
        dims[d] += sum(s.halo(d))
    return "tensor<" + "".join(f"{n}x" for n in dims) + f"{elt}>"


def plan_to_mlir(plan: Any, mesh_name: str = "mesh",
                 element_type: str | None = None) -> str:
    """A reshard plan as ``shard`` dialect ops (seed 003), one per collective step;
    point-to-point transfer steps, which no ``shard`` collective expresses, become a
    comment saying so. Types are per-device tile shapes; ``element_type`` defaults to
    ``i8``/``f16``/``f32``/``f64`` by the plan's itemsize.

    >>> from meshtensor import Mesh, Sharding, plan_reshard
    >>> m = Mesh([2, 2])
    >>> p = plan_reshard(Sharding(m, [[0]]), Sharding(m, [[0, 1]]), (8, 4))
    >>> print(plan_to_mlir(p))
    shard.grid @mesh(shape = 2x2)
    // reshard S(x) -> S(x,y), global tensor<8x4xf32>
    // from: shard.sharding @mesh split_axes = [[0]]
    // to:   shard.sharding @mesh split_axes = [[0, 1]]
    %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
    """
    what = "ReshardPlan.to_mlir"
    check_mesh_name(mesh_name, what)
    if element_type is None:
        if plan.itemsize not in _ELEMENT_TYPES:
            raise ValueError(f"{what}: no default element type for itemsize "
                             f"{plan.itemsize}; pass element_type (e.g. 'bf16')")
        element_type = _ELEMENT_TYPES[plan.itemsize]
    if not isinstance(element_type, str) or not re.fullmatch(r"[A-Za-z][\w]*", element_type):
        raise ValueError(f"{what}: element_type {element_type!r} is not an MLIR type name "
                         f"like 'f32'")
    shape = plan.global_shape
    m = plan.mesh

    def sharding_line(s: Sharding) -> str:
        try:
            return to_mlir(s, mesh_name)
        except ValueError:
            return f"{s} (partial: no shard.sharding form)"

    lines = [f"shard.grid @{mesh_name}(shape = {'x'.join(map(str, m.shape))})",
             f"// reshard {plan.src} -> {plan.tgt}, global tensor<"
             + "".join(f"{n}x" for n in shape) + f"{element_type}>",
             f"// from: {sharding_line(plan.src)}",
             f"// to:   {sharding_line(plan.tgt)}"]
    if not plan.steps:
        lines.append("// nothing to do: source and target are the same")
    v = 0
    for step in plan.steps:
        a, b = (_local_type(x, shape, element_type) for x in (step.before, step.after))
        if step.op == "transfers":
            lines.append(f"// %{v + 1} = point-to-point transfers of %{v}: {len(step.src)} "
                         f"copies, {step.bytes} B; no shard collective expresses them "
                         f"(shard.send/recv per device pair) : {a} -> {b}")
            v += 1
            continue
        kw = dict(getattr(step, "params", ()))
        if step.op == "update_halo":
            d = step.after
            attrs = (f"split_axes = [{', '.join(mlir_ints(x) for x in d.split_axes)}] "
                     f"halo_sizes = {mlir_ints(d.halo_sizes)}")
            lines.append(f"%{v + 1} = shard.update_halo %{v} on @{mesh_name} {attrs} : {b}")
            v += 1
            continue
        attrs = f"grid_axes = {mlir_ints(step.mesh_axes)}"
        if "reduction" in kw:
            attrs += f" reduction = <{_MLIR_REDUCTION[kw['reduction']]}>"
        for key in ("gather_axis", "slice_axis", "split_axis", "concat_axis", "scatter_axis"):
            if key in kw:
                attrs += f" {key} = {kw[key]}"
        lines.append(f"%{v + 1} = shard.{step.op} %{v} on @{mesh_name} {attrs} : {a} -> {b}")
        v += 1
    return "\n".join(lines)
