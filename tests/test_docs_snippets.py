"""Every ```python block of README.md and docs/*.md runs as written.

Each block runs as its own script (a file, so ``if __name__ == "__main__":`` and process
spawning work) as the main module of a fresh process of this environment, in an empty
temporary directory, with a timeout. It fails on a non-zero exit or a traceback on
stderr (a spawned rank can print one while the parent still exits 0) or known noise
there. Illustrations that cannot run belong in ```text blocks. Ids are ``path:line`` of
the opening fence.

Blocks that use tilelang, tvm or torch (seconds of imports each) run in a process
forked from a warm one that has imported them once (:class:`WarmRunner`); the others
in a new interpreter.
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import select
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT_S = 300  # generous: CI machines may be loaded; a hung block still fails
# A fence opens at the start of a line: ```python, optionally with attributes after it.
FENCE = re.compile(r"^```python[^\n`]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# Blocks that import tilelang/torch compile kernels or spawn processes: seconds each.
SLOW = re.compile(r"\b(tilelang|tvm|torch|meshtensor\.dist)\b")
# Blocks that start process groups on loopback run one at a time (conftest.spawn_lock).
SPAWNS = re.compile(r"\bmeshtensor\.dist\b|torch\.distributed")
# Noise no example may print: torch's C++ backtraces and gloo's all-to-all fallback
# warning (meshtensor.dist avoids or hides both: docs/dist.md, docs/interop.md).
NOISE = re.compile(r"^frame #\d+: |falling back with allgather", re.MULTILINE)


def doc_files(root: pathlib.Path) -> list[tuple[str, str]]:
    """``[(relative path, text)]`` of README.md and docs/*.md."""
    return [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8"))
            for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))]]


def doc_blocks(root: pathlib.Path = ROOT) -> list[tuple[str, str]]:
    """``[(id, code)]`` for every ```python block of README.md and docs/*.md."""
    return [(f"{name}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1))
            for name, text in doc_files(root) for m in FENCE.finditer(text)]


def unlabelled_fences(root: pathlib.Path = ROOT) -> list[str]:
    """``path:line`` of every opening fence without a language (a bare ```): such a
    block is neither run nor marked as text."""
    bare = []
    for name, text in doc_files(root):
        inside = False
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("```"):
                if not inside and not line[3:].strip():
                    bare.append(f"{name}:{n}")
                inside = not inside
    return bare


def _params():
    """One param per block: ``slow`` where it imports tilelang, tvm or torch; blocks that
    spawn process groups run on the worker of the other such tests (conftest.py
    spawn_lock; ``--dist loadgroup``)."""
    return [pytest.param(code, id=ident, marks=[pytest.mark.slow] * bool(SLOW.search(code))
                         + [pytest.mark.xdist_group("spawns")] * bool(SPAWNS.search(code)))
            for ident, code in doc_blocks()]


def test_blocks_are_found():
    ids = [i for i, _ in doc_blocks()]
    assert any(i.startswith("README.md:") for i in ids)
    assert any(i.startswith("docs/dist.md:") for i in ids)


def test_every_fence_names_its_language():
    assert unlabelled_fences() == [], "use ```python (run by this test) or ```text"


def test_fence_parsing(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("x\n```python\nprint(1)\n```\n```text\nno\n```\n")
    (tmp_path / "docs" / "a.md").write_text("\n\n```python title\na = 2\n\nb = 3\n```\n")
    assert doc_blocks(tmp_path) == [("README.md:2", "print(1)\n"),
                                     ("docs/a.md:3", "a = 2\n\nb = 3\n")]
    assert unlabelled_fences(tmp_path) == []
    (tmp_path / "docs" / "b.md").write_text("```text\n1\n```\n\n```\nx = 1\n```\n")
    assert unlabelled_fences(tmp_path) == ["docs/b.md:5"]


# The warm process: imports the slow modules once, then runs each script it is sent
# (one JSON line) in a forked child as ``__main__``, with stdout and stderr to files;
# it answers the child's pid, then its exit code.
_SERVER = r"""
import json, os, runpy, sys, traceback
import numpy, torch, tilelang, meshtensor, meshtensor.tilelang  # noqa: F401  (once)
print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(job["cwd"])
            for fd, path in ((1, job["out"]), (2, job["err"])):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            sys.argv, sys.path[0] = [job["script"]], job["cwd"]
            runpy.run_path(job["script"], run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class WarmRunner:
    """Runs scripts in processes forked from one that has imported numpy, torch,
    tilelang and meshtensor.tilelang (about 3 s of imports saved per script)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self._line(TIMEOUT_S) == "ready"

    def _line(self, timeout: float) -> str | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().strip() if ready else None

    def run(self, script: pathlib.Path, cwd: pathlib.Path) -> subprocess.CompletedProcess:
        out, err = cwd / "stdout.txt", cwd / "stderr.txt"
        self.proc.stdin.write(json.dumps({"script": str(script), "cwd": str(cwd),
                                          "out": str(out), "err": str(err)}) + "\n")
        self.proc.stdin.flush()
        pid = int(self._line(30))
        code = self._line(TIMEOUT_S)
        if code is None:
            os.kill(pid, signal.SIGKILL)
            self._line(30)
            raise subprocess.TimeoutExpired(str(script), TIMEOUT_S, stderr=err.read_text())
        return subprocess.CompletedProcess(str(script), int(code), out.read_text(),
                                           err.read_text())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="session")
def warm_runner():
    runner = None

    def get():
        nonlocal runner
        if runner is None:
            runner = WarmRunner()
        return runner
    yield get
    if runner is not None:
        runner.close()


@pytest.mark.parametrize("code", _params())
def test_doc_block_runs(code, tmp_path, spawn_lock, warm_runner):
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    spawns = SPAWNS.search(code) is not None
    try:
        with spawn_lock() if spawns else contextlib.nullcontext():
            if SLOW.search(code):
                r = warm_runner().run(script, tmp_path)
            else:
                r = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                                   capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"timed out after {TIMEOUT_S} s; stderr:\n{e.stderr}")
    if r.returncode != 0 or "Traceback" in r.stderr:
        pytest.fail(f"exit {r.returncode}; stderr:\n{r.stderr}", pytrace=False)
    if NOISE.search(r.stderr):
        pytest.fail(f"noise on stderr:\n{r.stderr}", pytrace=False)


def test_ci_runs_the_readme_commands():
    """.ci/run does the README's install (minus the demo) and its test command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    quick = re.search(r"^    (python3 -m venv .*meshtensor demo)$", readme, re.MULTILINE)
    assert quick, "README: the quick-start install + demo line is missing"
    install = [c.strip() for c in quick.group(1).split("&&")][:-1]
    assert f"    {' && '.join(install)}\n" in readme  # the Install section, same command
    ci_lines = [line.strip() for line in ci.splitlines()]
    for command in install:
        assert command in ci_lines, f".ci/run lacks the README step {command!r}"
    assert "    python -m pytest\n" in readme and "python -m pytest" in ci_lines


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Paths that name files outside the repository (the docs must stand alone).
OUTSIDE = re.compile(r"\.\./|design\.md|file://|/work/")


def test_links_stay_in_the_repository():
    """Every Markdown link of README.md and docs/*.md is an anchor or a file of this
    repository (no web page, nothing outside it), and no text names a file outside."""
    bad = []
    for name, text in doc_files(ROOT):
        base = (ROOT / name).parent
        for target in LINK.findall(text):
            path = target.split("#")[0]
            inside = (base / path).resolve().is_relative_to(ROOT) if path else True
            if "://" in target or not inside or (path and not (base / path).exists()):
                bad.append(f"{name}: {target}")
        bad += [f"{name}: mentions {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    assert bad == []


def test_the_test_command_runs_in_parallel_with_progress():
    """`python -m pytest` (the README's and CI's command) reads pyproject.toml: it runs on
    every core, shows pytest's progress (no -q) and lists the slowest tests; the extras
    that install the tests bring pytest-xdist."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    opts = project["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert opts[opts.index("-n") + 1] == "auto"
    assert any(re.fullmatch(r"--durations=[1-9]\d*", o) for o in opts)
    assert not {"-q", "--quiet", "-qq"} & set(opts)
    extras = project["project"]["optional-dependencies"]
    for extra in ("test", "all"):
        assert any(d.startswith("pytest-xdist") for d in extras[extra]), extra
