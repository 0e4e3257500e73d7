"""The kernel layer's package: its docstring examples run, and its imports run one way
(ir <- language <- analysis <- transform <- runtime <- engine <- kernels <- demos), as
TileLang keeps its language apart from its transforms."""
import ast
import doctest
import importlib
import pathlib
import pkgutil

import pytest

pytest.importorskip("tilelang")
import meshtensor.tilelang as pkg  # noqa: E402

MODULES = sorted(m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."))
# a module may import from its own layer and the layers before it, never after
LAYERS = ["logs", "c_header", "pass_config", "ir", "language", "analysis", "transform", "runtime",
          "engine", "kernels", "demos"]
# old module paths kept as thin aliases (docs/tilelang.md, "Moved modules"): above every
# layer, as the package's __init__ is
ALIASES = ["tilelang_mesh", "gemm", "passes"]


def layer(name: str) -> int:
    part = name.split(".")[2]
    return len(LAYERS) if part in ALIASES else LAYERS.index(part)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0


def _imports(name: str) -> set[str]:
    """The meshtensor.tilelang modules a module imports (module level or inside functions)."""
    module = importlib.import_module(name)
    name = module.__name__  # an alias module is the module it names
    path = pathlib.Path(module.__file__)
    tree = ast.parse(path.read_text())
    out = set()
    base = name.split(".")[:-1] if not path.name == "__init__.py" else name.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("meshtensor.tilelang."):
                out.add(mod)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("meshtensor.tilelang.")}
    return out


@pytest.mark.parametrize("name", [m for m in MODULES if m.count(".") >= 2])
def test_imports_run_one_way(name):
    mine = layer(name)
    later = sorted(m for m in _imports(name) if layer(m) > mine)
    assert not later, f"{name} (layer {LAYERS[mine]}) imports later layers {later}"


def test_every_module_is_in_a_layer():
    assert {m.split(".")[2] for m in MODULES if m.count(".") >= 2} <= set(LAYERS + ALIASES)
