"""Drawings: golden text for the seed's layouts, plans, PNG files, `meshtensor show`."""
import io
import pathlib
from contextlib import redirect_stdout

import numpy as np
import pytest

from meshtensor import Mesh, Sharding, plan_reshard, save_plan_png, save_png, visualize, visualize_plan
from meshtensor.cli import main

GOLDEN = pathlib.Path(__file__).parent / "golden"
T66 = np.array([[10 * r + c for c in range(1, 7)] for r in range(1, 7)])

CASES = {
    "seed_2x3_6x6.txt": lambda: visualize(Sharding(Mesh([2, 3]), [[0], [1]]), (6, 6)),
    "seed_2x3_6x6_values.txt": lambda: visualize(Sharding(Mesh([2, 3]), [[0], [1]]), (6, 6), values=T66),
    "seed_2x2x2_4x8.txt": lambda: visualize(Sharding(Mesh([2, 2, 2]), [[0], [1, 2]]), (4, 8)),
    "replicated_2x2_4x4.txt": lambda: visualize(Sharding(Mesh([2, 2]), [[], [1]]), (4, 4)),
    "halo_4_6.txt": lambda: visualize(Sharding(Mesh([4]), [[0]], halo_sizes=[1, 1]), (6,)),
    "partial_2x2.txt": lambda: visualize(Sharding(Mesh([2, 2]), [[1]], partial={0: "sum"}), (4, 8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    assert CASES[name]() + "\n" == (GOLDEN / name).read_text()


def test_drawings_say_what_they_show():
    rep = CASES["replicated_2x2_4x4.txt"]()
    assert rep.count("(0, 0) A") == 1 and rep.count("(1, 0) A") == 1  # replicas share a letter
    assert "each on 2 devices (replicated along ['x'])" in rep
    halo = CASES["halo_4_6.txt"]()
    assert "empty [6:6]" in halo and "halo [-1:3]" in halo
    part = CASES["partial_2x2.txt"]()
    assert "sum term 1/2" in part and "sum terms along ['x']" in part
    seed = CASES["seed_2x3_6x6_values.txt"]()
    assert "│ 41 42          │ 43 44" in seed
    assert "mesh axis y (1) --" in seed and "mesh axis x (0)" in seed


def test_high_rank_and_width():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["show", "--mesh", "4x4", "--shape", "8x12x5",
                     "--sharding", '{"x": 0, "y": 1}']) == 0
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 120
    assert "[0:2, 0:3, 0:5]" in out.getvalue()
    wide = visualize(Sharding(Mesh([2, 2]), [[0], [1]]), (4, 4), values=np.arange(16.0).reshape(4, 4) * 1e6,
                     max_width=60)
    assert max(len(line) for line in wide.splitlines()) <= 60
    r4 = visualize(Sharding(Mesh([2]), [[0]]), (2, 2, 2, 2), values=np.arange(16).reshape(2, 2, 2, 2))
    assert "[0, 1, :, :]" in r4  # rank > 2: one 2-D slice per leading index


def test_plan_text():
    m = Mesh([2, 3])
    text = visualize_plan(plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6)))
    assert "bytes sent (row: sender, column: receiver)" in text
    assert "   (0, 2)      .      .      .     16      8      ." in text
    big = visualize_plan(plan_reshard(Sharding(Mesh([5, 5]), [[0]]), Sharding(Mesh([5, 5]), [[1]]), (25,)))
    assert "->" in big and "bytes sent" not in big
    free = visualize_plan(plan_reshard(Sharding(m, []), Sharding(m, [[0]]), (6,)))
    assert "no communication" in free


def test_png_files(tmp_path):
    pytest.importorskip("matplotlib")
    p = tmp_path / "layout.png"
    save_png(Sharding(Mesh([2, 2, 2]), [[0], [1, 2]]), (4, 8), str(p))
    q = tmp_path / "plan.png"
    save_plan_png(plan_reshard(Sharding(Mesh([2, 3]), [[0], [1]]), Sharding(Mesh([2, 3]), [[1], [0]]), (6, 6)), str(q))
    for f in (p, q):
        data = f.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    r = tmp_path / "cli.png"
    with redirect_stdout(io.StringIO()):
        assert main(["show", "--mesh", "2x3", "--shape", "6x6", "--sharding", "[[0],[1]]",
                     "--png", str(r)]) == 0
    assert r.stat().st_size > 5000


def test_png_without_matplotlib(monkeypatch, tmp_path):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"PNG output needs matplotlib: pip install 'meshtensor\[viz\]'"):
        save_png(Sharding(Mesh([2]), [[0]]), (4,), str(tmp_path / "x.png"))


def test_errors():
    with pytest.raises(ValueError, match="meshes of 1 to 3 axes are drawn, this one has 4"):
        visualize(Sharding(Mesh([1, 1, 1, 2]), [[3]]), (4,))
    with pytest.raises(TypeError, match="sharding must be a Sharding"):
        visualize([[0]], (4,))
    with pytest.raises(ValueError, match="splits dim 1 but the tensor has rank 1"):
        visualize(Sharding(Mesh([2]), [[], [0]]), (4,))


# -- big meshes ---------------------------------------------------------------------------
REGION = r"\[-?\d+:-?\d+(, -?\d+:-?\d+)*\]"


@pytest.mark.parametrize("width", [120, 80, 50])
def test_64x64_layout_fits_the_width_and_cuts_with_an_ellipsis(width):
    import re
    s = Sharding(Mesh([64, 64]), [[0], [1]])
    text = visualize(s, (4096, 4096, 64), max_width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert len(lines) < 60 and "…" in text and "(63, 63)" in text
    cells = re.findall(r"│ (\[[^│]*?) *│", text)
    assert len(cells) >= 8
    for cell in cells:  # a region is whole or ends in …, never a cut-off number
        assert re.fullmatch(REGION, cell) or cell.endswith("…"), cell
    assert "[0:64, 0:64, 0:64]" in visualize(s, (4096, 4096, 64), max_width=120)


def test_cli_show_honours_width_on_64x64():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["show", "--mesh", "64x64", "--shape", "4096x4096x64",
                     "--sharding", '{"x": 0, "y": 1}', "--width", "100"]) == 0
    assert max(len(line) for line in out.getvalue().splitlines()) <= 100


def test_big_plan_text_is_a_summary():
    m = Mesh([64, 64])
    text = visualize_plan(plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (4096, 64)))
    lines = text.splitlines()
    assert len(lines) < 25 and "busiest link carries" in text and "bytes sent" not in text
    assert sum(") -> (" in line for line in lines) == 12  # the 12 largest copies


def test_64x64_png(tmp_path):
    pytest.importorskip("matplotlib")
    p = tmp_path / "big.png"
    save_png(Sharding(Mesh([64, 64]), [[0], [1]]), (4096, 4096, 64), str(p))
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    q = tmp_path / "plan.png"
    m = Mesh([32, 32])
    save_plan_png(plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (1024, 64)), str(q))
    assert q.stat().st_size > 5000


def test_binned_plan_png_keeps_linear_ids_on_its_axes(tmp_path, monkeypatch):
    # 32x32 = 1024 devices are drawn in 512 bins per side; the axes still say "linear
    # id", so they must span the ids 0..1023, not the bin numbers 0..511.
    plt = pytest.importorskip("matplotlib.pyplot")
    monkeypatch.setattr(plt, "close", lambda fig=None: None)  # keep the figure to look at
    m = Mesh([32, 32])
    save_plan_png(plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (1024, 64)),
                  str(tmp_path / "plan.png"))
    ax = plt.gcf().axes[0]
    assert ax.get_xlabel() == "receiver (linear id)"
    assert sorted(ax.get_xlim()) == [-0.5, 1023.5] and sorted(ax.get_ylim()) == [-0.5, 1023.5]
    assert "bytes per block of ~2 x 2 pairs" in ax.get_title()
    plt.close("all")
