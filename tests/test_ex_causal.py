"""causal: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py),
and its mistakes as edits of the reference."""

from __future__ import annotations

import pytest
import torch

from attnprep import exercises
from attnprep.grader import variants
from attnprep.grader.kinds import kind_for
from per_exercise import exec_stub

EX = exercises.get("causal")

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_functions",
    "objects": ("causal_mask", "causal_attention"),
    "signatures": {"causal_mask": "seq_len, device=None", "causal_attention": "q, k, v, attention_mask=None"},
    "order": 0,  # its place among the mission's six (SPEC §2), which the listing opens with
}


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("qkv_swap",)}


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)", "causal_mask(")
FIX_SAYS = {"masks_combined_or": "causal_mask("}


def test_causal_grading_configs():
    """The configs give the head counts and widths; the batches and lengths (one token, odd lengths,
    several samples) are the kind's own sequence cases, the same for every config."""
    from attnprep.grader.kinds import kind_for

    configs = exercises.get("causal").grading["configs"]
    assert len(configs) >= 3
    for c in configs:
        assert set(c) == {"heads", "dim"} and all(v >= 1 for v in c.values()), c
    assert any(c["heads"] > 1 for c in configs) and len({c["dim"] for c in configs}) == len(configs)
    cases = kind_for(exercises.get("causal"), 0).cases(0)
    lengths = {c.queries.shape[1] for c in cases}
    assert 1 in lengths and any(T > 4 and T % 2 for T in lengths)
    assert any(c.queries.shape[0] > 1 for c in cases)


def test_blank_causal_stub_raises_not_implemented():
    import torch

    ns = exec_stub(exercises.get("causal"))
    c = exercises.get("causal").grading["configs"][0]
    q = torch.zeros(2, c["heads"], 7, c["dim"])
    with pytest.raises(NotImplementedError, match="attnprep hint causal"):
        ns["causal_mask"](7)
    with pytest.raises(NotImplementedError, match="attnprep hint causal"):
        ns["causal_attention"](q, q, q)


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


def _same(case, got, want) -> bool:
    """Equal within the case's tolerance everywhere, NaN where the other is NaN."""
    from attnprep.grader.judge import close

    got, want = got.double(), want.double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    return close(got, want, torch.ones_like(got, dtype=torch.bool), equal_nan=True, tolerance=case.tolerance)


PAIRS = [("padding_mask_inverted", "causal_masks_diagonal"), ("missing_scale", "causal_leaks_next"),
          ("padding_mask_on_queries", "scale_inverted"), ("mask_fill_zero:padding", "padding_mask_inverted"),
          ("mask_after_softmax", "causal_masks_diagonal"), ("attn_times_k", "padding_mask_ignored"),
          ("softmax_wrong_dim", "causal_leaks_next"), ("mask_fill_zero:causal", "scale_by_dim")]


def _outputs(kind, ci: int, knob, fill=float("-inf")) -> list[dict]:
    with torch.no_grad():
        variant = kind.variant(ci, frozenset(), knob, fill)
        return [variant(case) for case in kind.cases(ci)]


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_every_knob_is_an_edit_that_applies_once_and_changes_an_output(knob):
    from attnprep.grader.edits import edited_source

    source = EX.solution_path.read_text(encoding="utf-8")
    for edit in EX.grading["edits"][knob]:
        assert source.count(edit["old"]) == 1, edit
        source = edited_source(source, [edit])
    kind = kind_for(EX, seed=0)
    differs = False
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        for case, got in zip(kind.cases(ci), _outputs(kind, ci, knob)):
            with torch.no_grad():
                want = reference(case)
            differs |= any(not _same(case, got[n], want[n]) for n in want)
    assert differs, knob


@pytest.mark.parametrize("pair", PAIRS, ids=str)
def test_two_edits_compose(pair):
    """Two knobs at once are both edit lists made in order, and differ somewhere from each alone."""
    from attnprep.grader.edits import edited_source

    kind = kind_for(EX, seed=0)
    source = EX.solution_path.read_text(encoding="utf-8")
    edits = list({(e["old"], e["new"]): e for k in pair for e in EX.grading["edits"][k]}.values())
    assert kind.edited.source(pair) == edited_source(source, edits)
    apart = dict.fromkeys(pair, False)
    for ci in range(len(kind.configs)):
        alone = dict(zip(pair, (_outputs(kind, ci, k) for k in pair)))
        for n, (case, both) in enumerate(zip(kind.cases(ci), _outputs(kind, ci, pair))):
            for k in pair:
                apart[k] |= any(not _same(case, both[name], alone[k][n][name]) for name in both)
    assert all(apart.values()), (pair, apart)


def test_a_fill_per_mask_is_written_where_the_reference_fills_both():
    """With a variants.MaskFills the reference's one fill becomes one fill per mask (mask_split): a
    padded key the causal mask also blocks gets the later fill, or their sum; a knob that merges the
    masks (or fills neither) keeps one fill, the padding's."""
    kind = kind_for(EX, seed=0)
    split = variants.MaskFills(float("-inf"), -1e9)
    source = kind.edited.source((), split)
    assert "mask_fills(scores, ~padding_allowed, ~causal_allowed)" in source and 'float("-inf")' not in source
    merged = kind.edited.source(("masks_combined_or",), split)
    assert "mask_fills" not in merged and "masked_fill(~allowed, -1000000000.0)" not in merged
    assert "masked_fill(~allowed, float(\"-inf\"))" in merged  # the padding's fill, -inf
    ci = 0
    cases = kind.cases(ci)
    seen = False
    for case, ref, per_mask in zip(cases, _outputs(kind, ci, ""), _outputs(kind, ci, "", split)):
        keys = ~ref["out"].isnan()  # a row with a key left: the same softmax
        assert _same(case, per_mask["out"][keys], ref["out"][keys])
    for case, inf, per_mask in zip(cases, _outputs(kind, ci, "padding_mask_inverted"),
                                   _outputs(kind, ci, "padding_mask_inverted", split)):
        nan = inf["out"].isnan()
        seen |= bool(nan.any()) and not per_mask["out"].isnan().any()  # a row every key of which is blocked
    assert seen
