"""Reading the ``meshtensor`` command's output in tests: its error messages are wrapped
to 80 columns (continuation lines indented by two), so a test checks that every line
fits and compares the message joined back into one line."""


def unwrap(text: str) -> str:
    """An error message as one line per message (continuation lines joined)."""
    return text.replace("\n  ", " ")


def read(capsys, width: int = 80) -> tuple[str, str]:
    """``(stdout, stderr)`` captured so far, stderr unwrapped; every stderr line fits
    ``width`` (or is one word too long for it, such as a long path)."""
    cap = capsys.readouterr()
    long = [ln for ln in cap.err.splitlines() if len(ln) > width and " " in ln.strip()]
    assert not long, long
    return cap.out, unwrap(cap.err)
