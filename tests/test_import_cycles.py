"""No module of ``src/meshtensor`` imports in a circle (issue 26): a static check over
every module's ``import`` statements, function-level (lazy) imports included, relative
imports resolved. A circle makes the layering a lie (two modules that need each other
are one module) and makes import order matter; a lazy import only hides it.

Rules (``import_graph``): ``from pkg import name`` depends on the module ``pkg.name``
when there is one, else on ``pkg``; ``import a.b`` depends on ``a.b``. A package's
parents are imported first anyway, so they are no edge. Statements under ``if
TYPE_CHECKING:`` never run and are not imports (docs/decisions.md, decision 103).
"""
import ast
import pathlib
import textwrap

import pytest

SRC = pathlib.Path(__file__).parents[1] / "src"

#: Circles outside the core layer that other work removes (the performance model's
#: ``cli``/``profile_cli``, the kernel layer's ``ir``): each entry is one circle's
#: modules. This list must shrink to empty; a circle not listed here fails, and so
#: does an entry that is no longer a circle (take it off).
ALLOWED: list[frozenset[str]] = []


def _modules(root: pathlib.Path) -> dict[str, tuple[pathlib.Path, bool]]:
    """Every module under ``root`` (a folder of packages): dotted name -> (file, is a
    package)."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, at any depth, but those under ``if TYPE_CHECKING``
    (their ``else`` branch does run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """module -> the modules of ``root`` it imports (see the module docstring)."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_pkg) in mods.items():
        package = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    if len(base) < len(package) - node.level + 1:
                        raise ValueError(f"{path}: relative import beyond the top package")
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                           for a in node.names]
            graph[name] |= {t for t in targets if t in mods and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module, as the list
    of modules along it (the first repeated at the end), components in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[set[str]] = []
    for root in sorted(graph):  # Tarjan's algorithm, iterative
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(comp)
    return [_circle(graph, c) for c in sorted(comps, key=min)]


def _circle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest circle through the component's first module (breadth first)."""
    start = min(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError(f"no circle in the component {sorted(comp)}")


def _components(found: list[list[str]], graph) -> list[frozenset[str]]:
    """The component each circle came from (every module that shares a circle with it)."""
    out = []
    for circle in found:
        reach = _reach(graph, circle[0])
        out.append(frozenset(m for m in reach if circle[0] in _reach(graph, m)))
    return out


def _reach(graph, start):
    seen, todo = {start}, [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_no_module_imports_in_a_circle():
    graph = import_graph(SRC)
    found = cycles(graph)
    comps = _components(found, graph)
    new = [" -> ".join(c) for c, comp in zip(found, comps) if comp not in ALLOWED]
    assert not new, "modules import in a circle (lazy imports count):\n" + "\n".join(new)
    gone = [sorted(a) for a in ALLOWED if a not in comps]
    assert not gone, f"no longer circles: take them off ALLOWED: {gone}"


def test_the_core_layer_imports_one_way():
    """The core modules (issue 26: boxes, collectives, interop, mesh_array, reduction,
    resharding, sharding) are in no circle at all, allowed or not."""
    graph = import_graph(SRC)
    core = [c for c in cycles(graph) if any(not m.startswith(("meshtensor.tilelang.",
                                                                 "meshtensor.cli",
                                                                 "meshtensor.profile_cli"))
                                                for m in c)]
    assert not core, core


def _package(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize("files, want", [
    ({"pkg/__init__.py": "", "pkg/a.py": "from . import b\n",
      "pkg/b.py": "def f():\n    from .a import g  # lazy\n"},
     ["pkg.a -> pkg.b -> pkg.a"]),
    ({"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/a.py": "import pkg.sub.c\n",
      "pkg/sub/c.py": "class K:\n    def m(self):\n        from ..a import x\n"},
     ["pkg.a -> pkg.sub.c -> pkg.a"]),
    ({"pkg/__init__.py": "from .a import f\n", "pkg/a.py": "from pkg import b\n",
      "pkg/b.py": "from . import VERSION\n"},
     ["pkg -> pkg.a -> pkg.b -> pkg"]),
    ({"pkg/__init__.py": "", "pkg/a.py": "from .b import x\n",
      "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                  "    from .a import y\nelse:\n    import os\n"},
     []),
    ({"pkg/__init__.py": "", "pkg/a.py": "from . import b\n", "pkg/b.py": "import os\n"},
     []),
], ids=["lazy", "nested-relative", "through-init", "type-checking-only", "one-way"])
def test_the_check_finds_a_planted_circle(tmp_path, files, want):
    """The check can fail: on a synthetic package with a circle it names it."""
    root = _package(tmp_path, files)
    assert [" -> ".join(c) for c in cycles(import_graph(root))] == want
