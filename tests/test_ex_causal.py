"""causal: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("qkv_swap",)}


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)", "causal_mask(")
FIX_SAYS = {"masks_combined_or": "causal_mask("}
