"""Every demo's output fits 80 columns by default and ``--width`` when given (it was up
to 252 columns wide)."""
import pytest

pytest.importorskip("tilelang")
from meshtensor.cli import main  # noqa: E402

DEMOS = {
    "summa_comm": ["demo", "--size", "64", "--repeat", "1"],
    "cannon_comm": ["demo", "--size", "64", "--repeat", "1", "--algorithm", "cannon_comm"],
    "spmdize-cannon": ["demo", "--size", "64", "--repeat", "1", "--spmdize",
                       "--algorithm", "cannon"],
    "tilelang-mesh": ["demo", "--size", "64", "--repeat", "1", "--tilelang-mesh"],
}


@pytest.mark.slow
@pytest.mark.parametrize("argv", DEMOS.values(), ids=DEMOS.keys())
@pytest.mark.parametrize("width", [None, 60])
def test_demo_output_fits_its_width(argv, width, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(argv + (["--width", str(width)] if width else [])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 10
    assert max(map(len, lines)) <= (width or 80), [ln for ln in lines if len(ln) > (width or 80)]
