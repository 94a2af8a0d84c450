"""The assertion the line tests share: a corpus attempt graded to its header's verdict, with a
divergence within one line of a bug line its header annotates (issue 24's line accuracy, as
benchmarks/lines.py measures it), said for the reason given when one is."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    from corpus_names import header
    from lines import bug_lines
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def assert_pointed(path: Path, result, reason: str | None = None):
    """Assert it of ``result``, the grade of corpus file ``path``; its divergence."""
    expect, _ = header(path)
    assert result.verdict.value == expect
    d = result.divergence
    assert d is not None, result.verdict
    if reason is not None:
        assert d.reason == reason, d
    assert min(abs(d.line - n) for n in bug_lines(path)) <= 1, (d.line, d.reason, d.code, bug_lines(path))
    return d
