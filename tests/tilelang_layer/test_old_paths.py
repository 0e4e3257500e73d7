"""Module paths the README or earlier layouts named keep working, or docs/tilelang.md
says where they went (issue 30: `import meshtensor.tilelang.tilelang_mesh` failed after
the module moved to `language/`, and `meshtensor.tilelang.passes` and the module
`meshtensor.tilelang.spmdize` disappeared without a word)."""
import importlib
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")
import meshtensor.tilelang as pkg  # noqa: E402

DOC = pathlib.Path(__file__).parents[2] / "docs" / "tilelang.md"


def _moved_table() -> list[tuple[str, list[str]]]:
    text = DOC.read_text().split("### Moved modules", 1)[1].split("\n\n`", 1)[0]
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    return [(re.findall(r"`([\w.]+)`", old), re.findall(r"`([\w.]+)`", new))
            for old, new in (r.strip("|").split("|")[:2] for r in rows)]


@pytest.mark.slow  # a process importing tilelang: seconds
def test_aliases_are_the_new_modules():
    # in a fresh process: the alias must work as a first import, too
    code = ("import meshtensor.tilelang.tilelang_mesh as tm, meshtensor.tilelang as P; "
            "import meshtensor.tilelang.language.tilelang_mesh as L; "
            "import meshtensor.tilelang.gemm as g, meshtensor.tilelang.kernels.gemm as kg; "
            "from meshtensor.tilelang.passes import VerifyMeshTensors, "
            "analyze_mesh_communication; "
            "print(tm is L, P.tilelang_mesh is L, g is kg, VerifyMeshTensors is "
            "P.VerifyMeshTensors, analyze_mesh_communication is "
            "P.analyze_mesh_communication, callable(P.spmdize))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split() == ["True"] * 6, r.stderr[-2000:]


def test_the_moved_list_names_every_old_module_and_where_it_went():
    table = _moved_table()
    old = {p for olds, _ in table for p in olds}
    assert {"meshtensor.tilelang.tilelang_mesh", "meshtensor.tilelang.passes",
            "meshtensor.tilelang.spmdize", "meshtensor.tilelang.gemm"} <= old
    for olds, news in table:
        for new in news:
            if new != "meshtensor.tilelang.spmdize":  # the function
                importlib.import_module(new)  # every "now" path imports
        for path in olds:
            name = path.rsplit(".", 1)[1]
            if (pathlib.Path(pkg.__file__).parent / f"{name}.py").exists():
                importlib.import_module(path)
            elif name != "spmdize":
                with pytest.raises(ModuleNotFoundError):
                    importlib.import_module(path)
