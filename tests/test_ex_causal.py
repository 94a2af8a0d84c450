"""causal: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("qkv_swap",)}


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)", "causal_mask(")
FIX_SAYS = {"masks_combined_or": "causal_mask("}


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------

import pytest  # noqa: E402
import torch  # noqa: E402

from attnprep import exercises as _exercises  # noqa: E402
from attnprep.grader import variants as _variants  # noqa: E402
from attnprep.grader.kinds import kind_for as _kind_for  # noqa: E402

_EX = _exercises.get(__name__.rsplit("test_ex_", 1)[-1])


def _same(case, got, want) -> bool:
    """Equal within the case's tolerance everywhere, NaN where the other is NaN."""
    from attnprep.grader.judge import close

    got, want = got.double(), want.double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    return close(got, want, torch.ones_like(got, dtype=torch.bool), equal_nan=True, tolerance=case.tolerance)


_PAIRS = [("padding_mask_inverted", "causal_masks_diagonal"), ("missing_scale", "causal_leaks_next"),
          ("padding_mask_on_queries", "scale_inverted"), ("mask_fill_zero:padding", "padding_mask_inverted"),
          ("mask_after_softmax", "causal_masks_diagonal"), ("attn_times_k", "padding_mask_ignored"),
          ("softmax_wrong_dim", "causal_leaks_next"), ("mask_fill_zero:causal", "scale_by_dim")]
# the mask mistakes tried with a fill per mask (variants.MASK_FILLS); the code variant of
# mask_after_softmax:causal fills its padding with -inf there, the edit with the padding's fill
_MASKED = [k for k in _EX.grading["knobs"] if k != "mask_after_softmax:causal"]


@pytest.mark.parametrize("fill", [*_variants.FILLS, *_variants.MASK_FILLS], ids=str)
@pytest.mark.parametrize("knob", [*_EX.grading["knobs"], *_PAIRS], ids=str)
def test_each_edit_computes_the_code_variant(knob, fill):
    """Before the switch: the edited reference gives the outputs of the code variant of the same
    knob (or pair of knobs) with the same fill on every case of every config."""
    if not isinstance(fill, float) and knob not in _MASKED:  # the judge tries a fill per mask on one knob only
        pytest.skip("a pair, or the code variant fills the padding with -inf whatever the per-mask fills")
    kind = _kind_for(_EX, seed=0)
    for ci in range(len(kind.configs)):
        code, edited = kind.variant(ci, frozenset(), knob, fill), kind.edited_variant(ci, frozenset(), knob, fill)
        for case in kind.cases(ci):
            with torch.no_grad():
                want, got = code(case), edited(case)
            for name in want:
                assert _same(case, got[name], want[name]), (ci, str(case.name), name)
