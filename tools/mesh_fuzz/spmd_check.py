"""The spmdize mode's oracle: what ``spmdize`` must give for a global-view program.

For every program the worker (:func:`~.worker.handle_spmdize`) compiles and runs the
global-view kernel, runs ``spmdize`` on the program alone, and compiles, verifies and
runs what it returns. :func:`judge` turns that answer into an outcome:

- the global-view kernel must run equal to the model (cores read global memory
  directly), and its analysis must count the remote bytes the model counts (the
  in-tensor cells of every block read or written on another core's shard);
- ``spmdize`` either raises ``ValueError`` (refused) or returns a kernel that (a)
  ``verify_mesh_tensors(out, owner_only=True)`` passes, (b) compiles and gives the
  model's tensors bit for bit (so the global view's too), and (c) receives through
  its comm ops the bytes docs/spmdize.md promises (:func:`promise`).

>>> table = {("A", "S"): {"remote": 64, "first_remote": 0, "later": 96}}
>>> promise(table, {("A", "S"): "carried"})
96
"""
from __future__ import annotations

import numpy as np

from .worker import first_line

#: the statuses a judgement may end in (as the runner's outcomes)
WRONG, CRASH, REFUSED, EQUAL = "wrong", "crash", "refused", "equal"


def byte_table(accesses) -> dict:
    """Per global-view read ``(tensor, buffer)``: the bytes of its blocks read from
    other cores (``remote``), of those at the first iteration of the innermost loop
    around it (``first_remote``; every remote read when it is in no loop), and of all
    its blocks at later iterations (``later``). Blocks count whole (staging tiles), as
    a comm op moves them."""
    out = {}
    for a in accesses:
        if a.write:
            continue
        remote = a.owner != a.core
        first = a.first != 0
        out[(a.tensor, a.buf)] = {"remote": int(a.stage[remote].sum()),
                                  "first_remote": int(a.stage[remote & first].sum()),
                                  "later": int(a.stage[~first].sum())}
    return out


def promise(table: dict, kinds: dict) -> int:
    """The bytes the comm ops of the spmdized program receive, by docs/spmdize.md:
    a ``broadcast``, ``shift`` or ``permute`` copy receives exactly the blocks the
    global view read from other cores (``remote``; whole staging tiles, padding past
    the tensor's edge included); a ``carried`` copy receives its first iteration's
    remote blocks, then at every later iteration every core's held block (a rotation
    also carries the tile that returns to its owner); a ``local`` copy nothing.
    ``table``: :func:`byte_table`; ``kinds``: ``(tensor, buffer)`` -> plan kind."""
    total = 0
    for key, b in table.items():
        kind = kinds.get(key, "local")
        if kind in ("broadcast", "shift", "permute"):
            total += b["remote"]
        elif kind == "carried":
            total += b["first_remote"] + b["later"]
    return total


def global_remote(accesses) -> int:
    """In-tensor bytes the global view reads or writes on other cores' shards (what
    ``analyze_mesh_communication`` counts as its remote bytes)."""
    return int(sum(a.inside[a.owner != a.core].sum() for a in accesses))


def spans(accesses) -> list:
    """``tensor -> buffer`` of the copies that touch several shards in one block."""
    return [f"{a.tensor} -> {a.buf}" for a in accesses if np.any(a.owner < 0)]


def kinds_of(plan: dict) -> dict:
    """``(tensor, buffer)`` -> plan kind, from a worker's plan of one program."""
    return {(c["src"], c["dst"]): c["kind"] for c in plan.get("copies", ())}


def _differ(expected: dict, got: dict) -> list:
    """The tensors of ``expected`` that ``got`` lacks or holds other values of."""
    return [n for n, want in expected.items() if n not in got or
            not np.array_equal(got[n], want)]


def judge(index: int, expected: dict, accesses, ans: dict, gv_names: list) -> tuple:
    """``(status, detail, phase)`` of program ``index`` from the worker's ``ans`` for
    a kernel that ran (``gv_names``: its tensors in parameter order); ``None`` when
    an analysis failed and every value checked out (the runner then runs the program
    alone). Values come first, so that a failed analysis never hides a wrong value."""
    if "outputs" not in ans:
        return CRASH, "the worker ran no global-view kernel", "run"
    bad = _differ(expected, dict(zip(gv_names, ans["outputs"])))
    if bad:
        return WRONG, "the global view differs from the model: " + ", ".join(bad), "run"
    plan = ans.get("plans", {}).get(index)
    if plan is None:
        return CRASH, "the worker gave no spmdize plan for the program", "spmdize"
    accepted = plan["status"] == "ok"
    if not accepted and plan["status"] != REFUSED:
        return plan["status"], first_line(plan), "spmdize"
    if accepted:
        multi = spans(accesses)
        if multi:
            return (WRONG, "spmdize accepts a block spanning several shards: " +
                    ", ".join(multi), "spmdize")
        issues = ans.get("issues", {}).get(index)
        if issues:
            return (WRONG, "verify_mesh_tensors(owner_only=True) on spmdize's output: " +
                    "; ".join(issues), "spmdize-verify")
        if "sp_outputs" not in ans:
            return CRASH, "the worker ran no kernel of spmdize's output", "spmdize-run"
        bad = _differ(expected, ans["sp_outputs"])
        if bad:
            return (WRONG, "spmdize's kernel differs from the model and the global view: "
                    + ", ".join(bad), "spmdize-run")
    if "analysis" in ans or (accepted and "sp_analysis" in ans):
        return None
    got = ans.get("report", {}).get(index, {}).get("remote", 0)
    want = global_remote(accesses)
    if got != want:
        return (WRONG, f"analysis of the global view: {got} remote bytes, the model "
                f"{want}", "analysis")
    if not accepted:
        return REFUSED, first_line(plan), "spmdize"
    got = ans.get("sp_report", {}).get(index, {}).get("comm", 0)
    want = promise(byte_table(accesses), kinds_of(plan))
    if got != want:
        return (WRONG, f"spmdize's comm ops receive {got} bytes, docs/spmdize.md "
                f"promises {want} (global view: {global_remote(accesses)} remote)",
                "spmdize-analysis")
    return EQUAL, "", ""


def judge_refused(index: int, expected: dict, accesses, ans: dict) -> tuple:
    """``(status, detail)`` of a program whose global-view kernel the layer refused
    or crashed on (``ans`` for the program alone). A refusal stands when ``spmdize``
    refuses the program too, or when what it returns is refused as well, or passes the
    owner-only check, reads no block spanning shards and runs equal to the model; a
    ``spmdize`` crash, or a result that fails one of those, is a failure."""
    detail = first_line(ans)
    plan = ans.get("plans", {}).get(index)
    if ans["status"] != REFUSED or plan is None or plan["status"] == REFUSED:
        return ans["status"], detail
    if plan["status"] != "ok":
        return plan["status"], f"spmdize: {first_line(plan)}"
    err = ans.get("sp_error")
    if err is not None:
        if err["status"] != REFUSED:
            return err["status"], f"spmdize's output ({err['phase']}): {first_line(err)}"
        return REFUSED, detail
    multi = spans(accesses)
    if multi:
        return WRONG, "spmdize accepts a block spanning several shards: " + ", ".join(multi)
    issues = ans.get("issues", {}).get(index)
    if issues:
        return (WRONG, "verify_mesh_tensors(owner_only=True) on spmdize's output: " +
                "; ".join(issues))
    bad = _differ(expected, ans.get("sp_outputs", {}))
    if bad:
        return WRONG, ("the layer refuses the global view, spmdize accepts it and its "
                       "kernel differs from the model: " + ", ".join(bad))
    return REFUSED, detail
