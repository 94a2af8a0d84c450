"""gqa: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("repeat",), "extra": {"repeat", "layer_drop"}}
