"""mqa: an expand that the reference leaves to broadcasting is no story of its own, and what the
shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

from pathlib import Path

from attnprep.grader import grade

CORPUS = Path(__file__).parent / "corpus" / "mqa"


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("qkv_swap",), "extra": {"layer_drop"}}


def test_one_shared_head_expanded_is_not_a_tiling():
    """MQA's one head expanded to every head (what the reference leaves to broadcasting) passes;
    tests/test_grader.py holds GQA's tiled copies, which are the line of their mistake."""
    assert grade(CORPUS / "ok_broadcast.py").passed
