"""Run generated programs against the kernel layer and classify each one.

Programs go to the workers in batches (one compiled kernel per batch). Each program is
first built alone, without compiling (TileLang's parser and our front end: most
refusals happen there), and gets its outcome there if it fails; the batch of the
others is compiled once. A batch that is still refused or crashes is split until
each failure sits on one program (a refusal stops the compilation before the C
compiler runs, so this is cheap); a wrong
program is run again alone, so its reproducer holds only that program when the bug
does not need the others. Each program ends with one :class:`Outcome`:

- ``equal``: ran, every tensor equals the model, and ``analyze_mesh_communication``
  counted the bytes the model counts;
- ``refused``: a ``ValueError`` raised by meshtensor (build, compile or analysis);
- ``wrong``: ran but a tensor differs from the model, or the analysis' comm bytes do;
- ``crash``: anything else (another exception, a dead worker, a timeout).

A program planted to be refused (``Program.expect``: a race, a start or root that
wraps out of range, a start or condition read from per-core memory) is run alone,
with ``check_races=True`` for a race: ``refused`` is its right outcome, and running
without a ``ValueError`` is ``wrong``. A valid program refused as it runs (by
``check_races=True``, the one check that runs with the kernel) is ``wrong``: the model
finds no race in it.

In the ``spmdize`` mode the programs are global-view kernels (:mod:`.global_view`) and
the worker also runs ``spmdize`` on them; :mod:`.spmd_check` judges each program.
"""
from __future__ import annotations

import re
import textwrap
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import spmd_check
from .generate import make_batch
from .global_view import GlobalGen
from .minimize import merge, minimize
from .model import GO_ON, SENTINEL, ModelError, Unrepresentable, run_model
from .program import Batch, Let, Load, Program, batch_source, children, comm_ops
from .reproducer import reproducer_source
from .worker import Worker, first_line

STATUSES = ("equal", "refused", "wrong", "crash")
MODES = ("kernels", "spmdize")


@dataclass(frozen=True)
class Outcome:
    """What happened to one program."""

    index: int
    status: str
    detail: str = ""
    phase: str = ""
    features: frozenset = frozenset()
    reproducer: str = ""
    expect: str = ""  # the program's planted reason to refuse ("" for a valid one)


@dataclass
class _Case:
    program: Program
    inputs: dict
    expected: dict  # tensor name -> array
    received: np.ndarray  # (ops, cores)
    accesses: tuple = ()  # model.Accesses of the global-view copies
    refusal: str = ""  # a planted program: why the layer must refuse it

    @classmethod
    def of(cls, program: Program, inputs: dict, result) -> "_Case":
        """A case from the model's ``result`` for ``program`` on ``inputs``."""
        return cls(program, inputs, result.tensors, result.received, result.accesses,
                   result.refusal)

    @property
    def nops(self) -> int:
        return len(comm_ops(self.program.body))


@dataclass
class Summary:
    """Counts and outcomes of a run."""

    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    batch_refusals: list = field(default_factory=list)  # refused only in a batch
    worker_cpu: float = 0.0  # CPU seconds of the workers (and their C compilers)
    own_cpu: float = 0.0  # CPU seconds of this process (generation, model)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    def line(self) -> str:
        return (f"{len(self.outcomes)} programs, {self.count('equal')} equal, "
                f"{self.count('refused')} refused, {self.count('wrong')} wrong, "
                f"{self.count('crash')} crashed")

    @property
    def failed(self) -> list:
        return [o for o in self.outcomes if o.status in ("wrong", "crash")]

    def valid_refused(self) -> tuple[int, int]:
        """``(refused, total)`` over the valid programs (none planted)."""
        valid = [o for o in self.outcomes if not o.expect]
        return sum(o.status == "refused" for o in valid), len(valid)

    def planted(self) -> dict:
        """Per planted reason: ``{status: count}`` of its programs."""
        out: dict = {}
        for o in self.outcomes:
            if o.expect:
                out.setdefault(o.expect, Counter())[o.status] += 1
        return out


def normalise(message: str) -> str:
    """A refusal message with its numbers and names blurred, to group refusals."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    first = re.sub(r"(let '[^']*') = .*? (reads|is used)", r"\1 = ... \2", first)
    first = re.sub(r"\{[^}]*\}", "{..}", first)
    first = re.sub(r"'[^']*'", "'_'", first)
    first = re.sub(r"\bp\d+_\w+", "p_", first)
    first = re.sub(r"\d+", "N", first)
    return first[:80]


class Fuzzer:
    """Generate, run and classify ``programs`` programs of run ``seed``.

    ``out``: the folder for reproducers and the workers' scratch files; ``jobs``
    workers run batches of ``batch_size`` programs; ``confirm`` is how many wrong
    programs may be run again alone (each costs one compilation); ``log`` receives
    progress lines; ``flags``: the C compiler flags (``None``: those of
    ``compile_mesh_kernel``); ``minimize``: kernel tries spent shrinking each failing
    program before its reproducer is written (0: none); ``mode``: ``kernels`` (mesh
    programs with comm ops) or ``spmdize`` (global-view programs through ``spmdize``);
    ``cache``: compile through TileLang's kernel cache (the tests' fixed slices do, so
    that a second run is fast; a long run should not fill the cache).
    """

    def __init__(self, seed: str, programs: int, out: str, batch_size: int = 16,
                 jobs: int = 1, exclude: frozenset = frozenset(), confirm: int = 20,
                 timeout: float = 300.0, log: Callable[[str], None] = print,
                 progress_every: float = 15.0, first: int = 0,
                 flags: list | None = None, minimize: int = 0, mode: str = "kernels",
                 cache: bool = False):
        if mode not in MODES:
            raise ValueError(f"Fuzzer: mode must be one of {list(MODES)}, got {mode!r}")
        self.mode, self.spmd, self.cache = mode, mode == "spmdize", cache
        self.seed, self.n, self.first = str(seed), programs, first
        self.out = Path(out)
        self.bs, self.jobs, self.ex = max(1, batch_size), max(1, jobs), exclude
        self.confirm, self.timeout, self.log = confirm, timeout, log
        self.every, self.flags, self.minimize = progress_every, flags, minimize
        self.lock = threading.Lock()
        self.summary = Summary()
        self.local = threading.local()
        self.workers: list[Worker] = []
        self.files = 0
        self.t0 = 0.0
        self.last = 0.0

    # -- workers ------------------------------------------------------------------------
    def worker(self) -> Worker:
        w = getattr(self.local, "w", None)
        if w is None:
            w = Worker(str(self.out / "work"), self.timeout, self.cache)
            self.local.w = w
            with self.lock:
                self.workers.append(w)
        return w

    def call(self, batch: Batch, cases: list, compile_: bool = True,
             build_only: bool = False) -> dict:
        batch = batch.with_programs([c.program for c in cases])
        races = batch.check_races or any(c.program.expect == "race" for c in cases)
        args = []
        if not build_only:  # a build reads no argument
            for c in cases:
                for t in c.program.tensors:
                    args.append(c.inputs[t.name] if t.role == "in" else
                                np.full(t.global_shape(batch), SENTINEL, dtype=t.dtype))
        req = {"args": args, "compile": compile_, "flags": self.flags,
               "build_only": build_only, "check_races": races}
        path = None
        if self.spmd:  # the worker writes the kernels (the batch, each program alone)
            req.update(mode="spmdize", batch=batch)
        else:
            with self.lock:
                self.files += 1
                path = self.out / "work" / f"kernel_{self.files}.py"
            path.write_text(batch_source(batch))
            req["path"] = str(path)
        ans = self.worker().call(req)
        with self.lock:
            self.summary.worker_cpu += ans.get("cpu", 0.0)
        if path is not None:
            path.unlink(missing_ok=True)
        return ans

    # -- one batch ------------------------------------------------------------------------
    def batches(self) -> list:
        """``(batch index, first program, count)``: batch ``k`` holds programs
        ``k * batch_size ..`` whatever ``first`` is, so a program's mesh (drawn per
        batch) depends only on the seed, its index and the batch size."""
        lo, hi = self.first, self.first + self.n
        return [(k, max(lo, k * self.bs), min(hi, (k + 1) * self.bs) - max(lo, k * self.bs))
                for k in range(lo // self.bs, -(-hi // self.bs))]

    def run_batch(self, spec: tuple) -> list:
        b, first, count = spec
        shell, inputs, results = make_batch(self.seed, b, first, count, self.ex,
                                            GlobalGen if self.spmd else None)
        cases = [_Case.of(p, x, m) for p, x, m in zip(shell.programs, inputs, results)]
        # a top-level let stays in scope for the programs after it: those with lets
        # of loaded data go last, so that one program's let does not span another's
        # comm ops (which the layer may refuse)
        cases.sort(key=lambda c: top_level_data_lets(c.program))
        outs = [self.planted(shell, c) for c in cases if c.program.expect]
        cases = [c for c in cases if not c.program.expect]
        if not self.spmd and len(cases) > 1:
            cases, more = self.screen(shell, cases)
            outs += more
        if cases:
            outs += self.check(shell, cases)
        return sorted(outs, key=lambda o: o.index)

    def planted(self, shell: Batch, case: _Case) -> Outcome:
        """The outcome of a program planted to be refused, run alone (a race with
        ``check_races=True``): refused, or wrong if it runs."""
        ans = self.call(shell, [case])
        return self.judge_planted(shell, case, ans)

    def judge_planted(self, shell: Batch, case: _Case, ans: dict) -> Outcome:
        p = case.program
        if ans["status"] != "ok":
            return self.failure(shell, [case], ans)
        out = Outcome(p.index, "wrong", f"ran, but must be refused: {case.refusal}"
                      f"{values_note(shell, case, ans)}", "run", p.features,
                      expect=p.expect)
        return self.with_repro(shell, [case], 0, out, _observed([case], 0, ans))

    def screen(self, shell: Batch, cases: list) -> tuple[list, list]:
        """``(cases built alone without failing, outcomes of the others)``. Building a
        program alone costs 1/16 of building a batch of 16, and a batch refused at
        build time would be built again for each refused program in it (16 times in
        the tests' slice, where a third of the programs are refused there)."""
        keep, outs = [], []
        for c in cases:
            ans = self.call(shell, [c], build_only=True)
            if ans["status"] == "ok":
                keep.append(c)
            else:
                outs.append(self.failure(shell, [c], ans))
        return keep, outs

    def check(self, shell: Batch, cases: list, ans: dict | None = None) -> list:
        """The outcomes of ``cases`` run as one kernel (``ans``: its answer, if known)."""
        ans = ans or self.call(shell, cases)
        if ans["status"] != "ok":
            if len(cases) == 1:
                return [self.failure(shell, cases, ans)]
            return self.split(shell, cases, ans)
        outs = [self.compare(shell, cases, i, ans) for i in range(len(cases))]
        outs = [o if o.status != "pending" else self.analyse_alone(shell, c)
                for o, c in zip(outs, cases)]
        return [self.confirm_wrong(shell, cases, i, o, ans) if o.status == "wrong" else o
                for i, o in enumerate(outs)]

    def split(self, shell: Batch, cases: list, ans: dict) -> list:
        """Outcomes of a batch that was refused or crashed: the program its message
        names is run alone and the rest again; without a name, halves."""
        k = suspect(ans, cases)
        if k is not None:
            alone = self.call(shell, [cases[k]])
            order = [cases[k]] + cases[:k] + cases[k + 1:]
            outs = self.check(shell, order[:1], alone) + self.check(shell, order[1:])
        else:
            mid = len(cases) // 2
            order = cases
            outs = self.check(shell, cases[:mid]) + self.check(shell, cases[mid:])
        if not any(self.explains(o) for o in outs):  # only together
            if ans["status"] == "crash":  # a crash is a bug wherever it shows
                group, ans = self.narrow(shell, order, ans)
                blame = [o.index for o in outs].index(group[-1].program.index)
                outs[blame] = self.failure(shell, group, ans, -1, combined=True)
            else:  # each program is accepted alone: a note, not an outcome
                self.note_combined(ans)
        return outs

    def explains(self, o: Outcome) -> bool:
        """Whether a program's own outcome explains its batch's refusal or crash
        (spmdize's refusals do not: its kernel holds only the programs it accepts)."""
        if self.spmd and o.status == "refused" and o.phase == "spmdize":
            return False
        return o.status not in ("equal", "wrong")

    def narrow(self, shell: Batch, cases: list, ans: dict) -> tuple[list, dict]:
        """A smallest group of ``cases`` whose kernel still crashes (one program left
        out at a time); its last program takes the blame."""
        group = list(cases)
        for c in list(group):
            if len(group) <= 2:
                break
            rest = [x for x in group if x is not c]
            again = self.call(shell, rest)
            if again["status"] == "crash":
                group, ans = rest, again
        return group, ans

    def note_combined(self, ans: dict) -> None:
        with self.lock:
            self.summary.batch_refusals.append(first_line(ans))

    def compare(self, shell: Batch, cases: list, i: int, ans: dict) -> Outcome:
        if self.spmd:
            return self.compare_spmd(shell, cases, i, ans)
        case = cases[i]
        names = [t.name for c in cases for t in c.program.tensors]
        got = dict(zip(names, ans["outputs"]))
        bad = [n for n, want in case.expected.items() if not np.array_equal(got[n], want)]
        feats = case.program.features
        if bad:
            return Outcome(case.program.index, "wrong", "differs from the model: " +
                           ", ".join(bad), "run", feats)
        rep = ans.get("report")
        miscounted = rep is not None and rep["received"].shape[0] != sum(c.nops for c in cases)
        if len(cases) > 1 and ("analysis" in ans or miscounted):
            # which program the analysis trips on shows when each is analysed alone
            return Outcome(case.program.index, "pending")
        if "analysis" in ans:
            a = ans["analysis"]
            return Outcome(case.program.index, a["status"], first_line(a), "analysis", feats)
        why = self.report_diff(ans.get("report"), shell, cases, i)
        if why:
            return Outcome(case.program.index, "wrong", why, "analysis", feats)
        return Outcome(case.program.index, "equal", features=feats)

    def compare_spmd(self, shell: Batch, cases: list, i: int, ans: dict) -> Outcome:
        """The spmdize mode's outcome of ``cases[i]`` (see :mod:`.spmd_check`); an
        analysis that failed in a batch leaves it ``pending`` (analysed alone)."""
        case = cases[i]
        idx, feats = case.program.index, case.program.features
        names = [t.name for c in cases for t in c.program.tensors]
        got = spmd_check.judge(idx, case.expected, case.accesses, ans, names)
        if got is None:
            if len(cases) > 1:
                return Outcome(idx, "pending")
            if "analysis" in ans:  # the analysis may refuse a global view
                a = ans["analysis"]
                return Outcome(idx, a["status"], first_line(a), a["phase"], feats)
            a = ans["sp_analysis"]  # but not what spmdize returned
            return Outcome(idx, "crash", "the analysis fails on spmdize's output: " +
                           first_line(a), a["phase"], feats)
        status, detail, phase = got
        return Outcome(idx, status, detail, phase, feats)

    def report_diff(self, rep: dict | None, shell: Batch, cases: list, i: int) -> str:
        if rep is None:  # right only for a kernel without comm ops (a shrunk one)
            return "" if not any(c.nops for c in cases) else \
                "analyze_mesh_communication returned None"
        if rep["names"] != shell.names or rep["shape"] != shell.shape:
            return (f"analysis: mesh {dict(zip(rep['names'], rep['shape']))}, "
                    f"kernel mesh {dict(shell.mesh)}")
        lo = sum(c.nops for c in cases[:i])
        total = sum(c.nops for c in cases)
        if rep["received"].shape[0] != total:
            return f"analysis: {rep['received'].shape[0]} comm ops, the kernel has {total}"
        got = rep["received"][lo:lo + cases[i].nops]
        if not np.array_equal(got, cases[i].received):
            return (f"analysis: comm bytes received per core {got.sum(0).tolist()}, "
                    f"model {cases[i].received.sum(0).tolist()}")
        return ""

    def analyse_alone(self, shell: Batch, case: _Case) -> Outcome:
        # the spmdize mode runs both kernels again: its judgement checks values first
        ans = self.call(shell, [case], compile_=self.spmd)
        idx, feats = case.program.index, case.program.features
        if ans["status"] != "ok":
            return Outcome(idx, "crash", "built in a batch, not alone: " + first_line(ans),
                           ans["phase"], feats)
        if self.spmd:
            out = self.compare_spmd(shell, [case], 0, ans)
            if out.status == "crash":
                out = self.with_repro(shell, [case], 0, out, _observed([case], 0, ans))
            return out
        if "analysis" in ans:
            a = ans["analysis"]
            out = Outcome(idx, a["status"], first_line(a), "analysis", feats)
            if a["status"] == "crash":
                out = self.with_repro(shell, [case], 0, out, a.get("traceback", ""))
            return out
        why = self.report_diff(ans.get("report"), shell, [case], 0)
        return Outcome(idx, "wrong" if why else "equal", why, "analysis", feats)

    def failure(self, shell: Batch, cases: list, ans: dict, blame: int = -1,
                combined: bool = False) -> Outcome:
        """The outcome of ``cases[blame]`` when the kernel of ``cases`` was refused or
        crashed (``combined``: only together, each program passes alone)."""
        blame %= len(cases)
        case = cases[blame]
        detail, status = first_line(ans), ans["status"]
        if self.spmd and len(cases) == 1:
            status, detail = spmd_check.judge_refused(case.program.index, case.expected,
                                                      case.accesses, ans)
        if combined:
            detail = f"only together with programs {[c.program.index for c in cases]}: " \
                     + detail
        false_race = (status == "refused" and ans["phase"] == "run" and len(cases) == 1
                      and not case.program.expect and not self.spmd)
        if false_race:  # only a race may stop a run, and the model finds none
            status, detail = "wrong", f"refused as it ran, with no race: {detail}"
        out = Outcome(case.program.index, status, detail, ans["phase"],
                      case.program.features, expect=case.program.expect)
        if out.status in ("crash", "wrong"):
            seen = ans.get("traceback", "") if status == "crash" or false_race else \
                _observed(cases, blame, ans)
            out = self.with_repro(shell, cases, blame, out, seen)
        return out

    def confirm_wrong(self, shell: Batch, cases: list, i: int, out: Outcome, ans: dict
                      ) -> Outcome:
        """Run a wrong program alone; its reproducer holds it alone if it is still
        wrong there, else the whole batch."""
        with self.lock:
            budget = self.confirm > 0
            self.confirm -= 1
        if len(cases) > 1 and budget:
            ans = self.call(shell, [cases[i]])
            if ans["status"] == "ok":
                alone = self.compare(shell, [cases[i]], 0, ans)
                if alone.status == "wrong":
                    return self.with_repro(shell, [cases[i]], 0, alone,
                                           _observed([cases[i]], 0, ans))
                out = Outcome(out.index, out.status, out.detail + " (only in its batch; "
                              "alone it is " + alone.status + ")", out.phase, out.features)
                if self.minimize:  # shrink the whole batch as one program
                    whole = self.merged(shell, cases, out.index)
                    ans = self.call(shell, [whole])
                    if self.classify_alone(shell, whole, ans).status == "wrong":
                        return self.with_repro(shell, [whole], 0, out,
                                               _observed([whole], 0, ans))
        return self.with_repro(shell, cases, i, out, _observed(cases, i, ans))

    def merged(self, shell: Batch, cases: list, index: int) -> _Case:
        """The batch's programs as one program (numbered ``index``)."""
        p = merge([c.program for c in cases], index)
        x = {k: v for c in cases for k, v in c.inputs.items()}
        m = run_model(shell.with_programs((p,)), p, x)
        return _Case.of(p, x, m)

    def classify_alone(self, shell: Batch, case: _Case, ans: dict) -> Outcome:
        """The outcome of one program's own kernel run (``ans``)."""
        if case.program.expect and ans["status"] == "ok":
            return Outcome(case.program.index, "wrong", "ran", "run",
                           expect=case.program.expect)
        if ans["status"] != "ok":
            status, detail = ans["status"], first_line(ans)
            if self.spmd:
                status, detail = spmd_check.judge_refused(case.program.index, case.expected,
                                                          case.accesses, ans)
            return Outcome(case.program.index, status, detail, ans["phase"])
        return self.compare(shell, [case], 0, ans)

    def shrink(self, shell: Batch, case: _Case, out: Outcome, observed: str
               ) -> tuple[_Case, str]:
        """A smaller program failing like ``case`` does (see :mod:`.minimize`)."""
        last = [observed]

        def still(p: Program, m) -> bool:
            c = _Case.of(p, case.inputs, m)
            ans = self.call(shell, [c])
            o = self.classify_alone(shell, c, ans)
            if not same_failure(out, o):
                return False
            last[0] = (ans.get("traceback", "") if o.status == "crash"
                       else _observed([c], 0, ans))
            return True

        p = minimize(shell, case.program, case.inputs, still, self.minimize)
        m = run_model(shell.with_programs((p,)), p, case.inputs)
        return _Case.of(p, case.inputs, m), last[0]

    def with_repro(self, shell: Batch, cases: list, i: int, out: Outcome, observed: str
                   ) -> Outcome:
        if self.minimize and len(cases) == 1:
            small, observed = self.shrink(shell, cases[0], out, observed)
            cases = [small]
            out = Outcome(out.index, out.status, out.detail + " (minimized)", out.phase,
                          out.features)
        kind = "wrong" if out.status == "wrong" else "crash"
        path = self.out / f"{kind}_seed{_safe(self.seed)}_program{out.index}.py"
        title = (f"meshtensor kernel fuzzer: seed {self.seed}, program {out.index}: "
                 f"{out.status} ({out.phase})\nfeatures: {', '.join(sorted(out.features))}")
        if len(cases) > 1:
            title += f"; shown in its batch of {len(cases)}, look at p{out.index}_*"
        batch = shell.with_programs([c.program for c in cases])
        text = reproducer_source(batch, [c.inputs for c in cases],
                                 [c.expected for c in cases], [c.received for c in cases],
                                 title, out.detail, observed,
                                 [c.accesses for c in cases] if self.spmd else None,
                                 must_refuse="; ".join(c.refusal for c in cases
                                                       if c.refusal),
                                 check_races=batch.check_races or any(
                                     c.program.expect == "race" for c in cases))
        path.write_text(text)
        return Outcome(out.index, out.status, out.detail, out.phase, out.features, str(path),
                       out.expect)

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> Summary:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "work").mkdir(exist_ok=True)
        self.t0 = self.last = time.monotonic()
        cpu0 = time.process_time()

        try:
            with ThreadPoolExecutor(self.jobs) as pool:
                for outs in pool.map(self._batch_logged, self.batches()):
                    pass
        finally:
            for w in self.workers:
                w.stop()
        self.summary.seconds = time.monotonic() - self.t0
        self.summary.own_cpu = time.process_time() - cpu0
        self.summary.outcomes.sort(key=lambda o: o.index)
        return self.summary

    def _batch_logged(self, spec: tuple) -> list:
        outs = self.run_batch(spec)
        with self.lock:
            self.summary.outcomes += outs
            for o in outs:
                if o.status in ("wrong", "crash"):
                    self.log(textwrap.fill(f"{o.status}: program {o.index}: {o.detail[:240]}",
                                           80, subsequent_indent="  ",
                                           break_on_hyphens=False))
                    if o.reproducer:
                        self.log(f"  {o.reproducer}")
            now = time.monotonic()
            done = len(self.summary.outcomes)
            if now - self.last >= self.every or done == self.n:
                self.last = now
                rate = (now - self.t0) / max(done, 1)
                s = self.summary
                self.log(f"[{done}/{self.n}] {s.count('equal')} equal, "
                         f"{s.count('refused')} refused, {s.count('wrong')} wrong, "
                         f"{s.count('crash')} crashed; {rate:.2f} s/program")
        return outs


def values_note(shell: Batch, case: _Case, ans: dict) -> str:
    """For a planted program that ran: whether its tensors are what the cores would
    compute (known for a start or condition read from memory only)."""
    try:
        full = run_model(shell.with_programs((case.program,)), case.program, case.inputs,
                         go_on=True)
    except (ModelError, Unrepresentable):
        return ""
    if full.refusal.split(":")[0] not in GO_ON:
        return ""
    names = [t.name for t in case.program.tensors]
    same = all(np.array_equal(g, full.tensors[n]) for n, g in zip(names, ans["outputs"]))
    return " (its values are the model's)" if same else " (its values differ from the " \
        "model's too)"


def suspect(ans: dict, cases: list) -> int | None:
    """The case a refusal or crash message names: by a ``p<index>_`` name, else by
    ``comm op #<n>`` (numbered over the batch)."""
    msg = ans.get("message", "")
    where = {c.program.index: k for k, c in enumerate(cases)}
    for m in re.finditer(r"\bp(\d+)_", msg):
        if int(m.group(1)) in where:
            return where[int(m.group(1))]
    m = re.search(r"comm op #(\d+)", msg)
    if m:
        n = int(m.group(1))
        for k, c in enumerate(cases):
            if n < c.nops:
                return k
            n -= c.nops
    return None


def same_failure(a: Outcome, b: Outcome) -> bool:
    """Whether ``b`` fails the way ``a`` does (status, phase, and for a crash or
    refusal its message without numbers)."""
    if a.status != b.status or a.phase != b.phase:
        return False
    if a.status in ("crash", "refused"):
        return normalise(a.detail) == normalise(b.detail)
    return True


def top_level_data_lets(p: Program) -> int:
    """How many top-level lets of ``p`` read a buffer or tensor."""
    return sum(isinstance(s, Let) and _reads(s.value) for s in p.body)


def _reads(e) -> bool:
    return isinstance(e, Load) or any(_reads(c) for c in children(e))



def _observed(cases: list, i: int, ans: dict) -> str:
    """What the kernel gave where it differs from the model (tensors, comm bytes)."""
    names = [t.name for c in cases for t in c.program.tensors]
    got = dict(zip(names, ans.get("outputs", [])))
    lines = [f"{n} = {got[n].ravel().tolist()}" for n, want in cases[i].expected.items()
             if n in got and not np.array_equal(got[n], want)]
    if "plans" in ans:  # the spmdize mode
        idx = cases[i].program.index
        sp = ans.get("sp_outputs", {})
        lines += [f"spmdized {n} = {sp[n].ravel().tolist()}"
                  for n, want in cases[i].expected.items()
                  if n in sp and not np.array_equal(sp[n], want)]
        lines += ans.get("issues", {}).get(idx, [])
        lines += [f"plan: {c['text']}" for c in ans["plans"].get(idx, {}).get("copies", [])]
        lines.append(f"analysis per program: global view {ans.get('report', {}).get(idx)}, "
                     f"spmdized {ans.get('sp_report', {}).get(idx)}")
        return "\n".join(lines)
    rep = ans.get("report")
    if rep is not None:
        lo = sum(c.nops for c in cases[:i])
        lines.append(f"analysis mesh {dict(zip(rep['names'], rep['shape']))}, comm bytes "
                     f"received {rep['received'][lo:lo + cases[i].nops].tolist()}")
    return "\n".join(lines)


def _safe(seed: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", seed)


def outcomes_json(summary: Summary) -> list:
    """The outcomes as JSON-ready dicts."""
    return [{"index": o.index, "status": o.status, "phase": o.phase, "detail": o.detail,
             "features": sorted(o.features), "reproducer": o.reproducer,
             "expect": o.expect} for o in summary.outcomes]


def refusal_table(summary: Summary, width: int = 80) -> list:
    """The refusal messages of valid programs (none planted), grouped, most frequent
    first."""
    c = Counter(normalise(o.detail) for o in summary.outcomes
                if o.status == "refused" and not o.expect)
    return [f"{n:5d}  {msg}"[:width] for msg, n in c.most_common()]


def planted_refusal_table(summary: Summary, width: int = 80) -> list:
    """The refusal messages of planted programs, grouped by reason and message (a
    reason refused for another cause was not tested)."""
    c = Counter(f"{o.expect}: {normalise(o.detail)}" for o in summary.outcomes
                if o.status == "refused" and o.expect)
    return [f"{n:5d}  {msg}"[:width] for msg, n in c.most_common()]


def planted_table(summary: Summary) -> list:
    """Per planted reason: how many programs, and how many of them were refused,
    ran (wrong) or crashed."""
    return [f"{kind:>14}: {sum(c.values()):4d} planted, {c['refused']:4d} refused, "
            f"{c['wrong']:4d} ran, {c['crash']:4d} crashed"
            for kind, c in sorted(summary.planted().items())]


def feature_table(summary: Summary) -> list:
    """Per feature: programs using it, and how many of them were wrong or crashed."""
    use, bad = Counter(), Counter()
    for o in summary.outcomes:
        for f in o.features:
            use[f] += 1
            bad[f] += o.status in ("wrong", "crash")
    return [(f, use[f], bad[f]) for f in sorted(use)]
