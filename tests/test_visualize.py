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


def test_binned_plan_png_names_blocks_by_their_first_device(tmp_path, monkeypatch):
    # 32x32 = 1024 devices are drawn in 512 bins per side; each tick names its block's
    # first device by coordinates, so the ticks span (0, 0) to (31, 30), not 0..511.
    plt = pytest.importorskip("matplotlib.pyplot")
    monkeypatch.setattr(plt, "close", lambda fig=None: None)  # keep the figure to look at
    m = Mesh([32, 32])
    save_plan_png(plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (1024, 64)),
                  str(tmp_path / "plan.png"))
    ax = plt.gcf().axes[0]
    assert ax.get_xlabel() == "receiver (mesh coordinates)"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "(0, 0)" and labels[-1] == "(31, 30)" and len(labels) == 8
    assert "each pixel a block of ~2 devices per side" in ax.get_title()
    plt.close("all")


# -- widths: every line fits, whatever the mesh, names, sizes and values --------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from strategies import n_examples, shardings  # noqa: E402

NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=24)


@st.composite
def drawings(draw):
    """A layout with user-picked axis names (up to 24 characters), meshes of up to 40
    per axis, tensors of small or huge sizes, with halos, partial axes or offsets."""
    ndim = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 40), min_size=ndim, max_size=ndim)
                 .filter(lambda s: int(np.prod(s)) <= 1600))
    names = draw(st.lists(NAME, min_size=ndim, max_size=ndim, unique=True))
    mesh = Mesh(dict(zip(names, sizes)))
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 3, 7, 64, 1000, 123456789]),
                                min_size=rank, max_size=rank)))
    s = draw(shardings(mesh, rank, partial=True, halos=True, offsets=True, shape=shape))
    # local values only of small tensors (a halo around an empty dim of a huge one
    # makes huge local arrays)
    values = draw(st.booleans()) and max(shape, default=0) <= 64
    return s, shape, values


@settings(max_examples=n_examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(drawings(), st.integers(40, 160))
def test_every_drawing_fits_its_width(case, width):
    s, shape, values = case
    arr = np.arange(int(np.prod(shape))).reshape(shape) * 1001 if values else None
    text = visualize(s, shape, values=arr, max_width=width)
    wide = [line for line in text.splitlines() if len(line) > width]
    assert not wide, wide


@pytest.mark.parametrize("width, err, match", [
    (39, ValueError, "visualize: max_width must be >= 40 .*, got 39"),
    (80.0, TypeError, "visualize: max_width must be an int, got float"),
])
def test_visualize_width_errors(width, err, match):
    with pytest.raises(err, match=match):
        visualize(Sharding(Mesh([2]), [[0]]), (4,), max_width=width)


def test_visualize_plan_width_error():
    m = Mesh({"row": 2, "col": 2})
    p = plan_reshard(Sharding(m, [["row"]]), Sharding(m, [["col"]]), (4,))
    with pytest.raises(ValueError, match="visualize_plan: width must be an int >= 40, got 30"):
        visualize_plan(p, width=30)


def test_a_long_axis_name_is_cut_not_overflowing():
    m = Mesh({"data_parallel_replicas_of_the_model": 4, "tensor_parallel": 4})
    text = visualize(Sharding(m, [[0], [1]]), (8, 8), max_width=40)
    assert max(len(line) for line in text.splitlines()) <= 40
    assert "mesh axis data_parallel_replicas_of_the…" in text  # on its own line
    assert "mesh axis tensor_parallel (1) --" in text


@pytest.mark.parametrize("mesh, shape, split, line", [
    ([4], (2,), [[0]], "2 distinct shards (letters), one per device; 2 of 4 devices hold "
                       "an empty shard (no letter)"),
    ([2, 4], (4, 2), [[0], [1]], "4 distinct shards (letters), one per device; 4 of 8 "
                                 "devices hold an empty shard (no letter)"),
    ([1000, 1000], (1024, 1024), [[0], [1]],
     "262144 distinct shards (letters), one per device; 737856 of 1000000 devices hold "
     "an empty shard (no letter)"),
    ([2, 2], (6, 0), [[0], [1]], "every device's shard is empty: the tensor (6, 0) has "
                                 "no elements"),
    ([2, 2], (), [], "1 distinct shard (letter), each on 4 devices (replicated along "
                     "['x', 'y'])"),
    ([2, 2], (4,), [[1]], "2 distinct shards (letters), each on 2 devices (replicated "
                          "along ['x'])"),
], ids=["uneven-1d", "uneven-2d", "huge-mesh", "no-elements", "scalar", "replicated"])
def test_header_says_what_is_true(mesh, shape, split, line):
    """Issue 30: the header counted empty shards as letters and divided the mesh by
    that count ("3 distinct shards, one per device" on 4 devices; "each on 3 devices
    ()"). Now: non-empty shards, devices per shard, and the devices left empty."""
    from meshtensor.visualize import shards_line
    s = Sharding(Mesh(mesh), split)
    assert shards_line(s, shape) == line
    if max(mesh) <= 8:
        text = visualize(s, shape, max_width=200)
        assert text.splitlines()[1] == line
        letters = {cell.split(")")[-1].strip() for ln in text.splitlines()
                   for cell in ln.split("│") if cell.strip().startswith("(")}
        n = int(line.split()[0]) if line[0].isdigit() else 0
        assert len(letters - {""}) == n  # empty shards carry no letter


def test_png_leaves_empty_shards_blank(tmp_path):
    pytest.importorskip("matplotlib")
    save_png(Sharding(Mesh([4]), [[0]]), (2,), str(tmp_path / "e.png"))
    assert (tmp_path / "e.png").stat().st_size > 0


def test_png_draws_halos():
    """Issue 30: `show --halo 1,1,0,0 --png` drew no halo. Each shard's halo window is
    a dashed outline now (clipped to the tensor)."""
    pytest.importorskip("matplotlib")
    from matplotlib.patches import Rectangle
    from meshtensor.visualize import _layout_figure, _plt
    s = Sharding(Mesh([2, 2]), [[0], [1]])
    for halo, want in (([1, 1, 0, 0], {(-0.5, -0.5, 4, 5), (3.5, -0.5, 4, 5),
                                       (-0.5, 2.5, 4, 5), (3.5, 2.5, 4, 5)}), (None, set())):
        fig = _layout_figure(s.replace(halo_sizes=halo) if halo else s, (8, 8))
        got = {(p.get_x(), p.get_y(), p.get_width(), p.get_height())
               for p in fig.axes[0].patches if isinstance(p, Rectangle) and
               p.get_label() == "halo"}
        _plt().close(fig)
        assert got == want


def test_plan_png_names_devices_by_coordinates_and_bytes():
    """Issue 30: `plan --png` labelled its axes "linear id" while the text names devices
    by coordinates, and the colour bar had no unit."""
    pytest.importorskip("matplotlib")
    from meshtensor.visualize import _plan_figure, _plt
    m = Mesh([2, 3])
    fig = _plan_figure(plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6)))
    ax, bar = fig.axes[0], fig.axes[1]
    assert ax.get_xlabel() == "receiver (mesh coordinates)"
    assert ax.get_ylabel() == "sender (mesh coordinates)"
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        str(m.multi_index(d)) for d in range(6)]
    assert bar.get_ylabel() == "bytes sent"
    _plt().close(fig)
    big = Mesh([32, 32])
    fig = _plan_figure(plan_reshard(Sharding(big, [[0], [1]]), Sharding(big, [[1], [0]]),
                                    (64, 64)))
    assert fig.axes[1].get_ylabel() == "bytes sent per block"
    assert fig.axes[0].get_xticklabels()[-1].get_text() == "(31, 30)"  # a block's first
    _plt().close(fig)
