"""causal: what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py),
its mistakes as edits of the reference, and the reference checked in float64 against torch's SDPA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader.kinds import kind_for
from attnprep.solutions.causal import causal_attention, causal_mask
from per_exercise import (ATOL, RTOL, SHAPES, MASKED_ATTENTION_PAIRS, assert_close_graded, assert_pair_composes, exec_stub,  # noqa: F401
                          one_thread, right_padding, torch_attention)  # (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

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

    ns = exec_stub(exercises.get("causal"))
    c = exercises.get("causal").grading["configs"][0]
    q = torch.zeros(2, c["heads"], 7, c["dim"])
    with pytest.raises(NotImplementedError, match="attnprep hint causal"):
        ns["causal_mask"](7)
    with pytest.raises(NotImplementedError, match="attnprep hint causal"):
        ns["causal_attention"](q, q, q)


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


@pytest.mark.parametrize("pair", MASKED_ATTENTION_PAIRS, ids=str)
def test_two_edits_compose(pair):
    """Two knobs at once are both edit lists made in order, and differ somewhere from each alone."""
    assert_pair_composes(EX, pair)


# --- the reference against torch's SDPA (float64) ---------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 5, 8])
def test_reference_mask_values(T):
    m = causal_mask(T)
    assert m.dtype == torch.bool and m.shape == (T, T)
    assert all(bool(m[i, j]) == (j <= i) for i in range(T) for j in range(T))
    assert causal_mask(T, device="meta").device.type == "meta"


@pytest.mark.parametrize("padding", [False, True], ids=["plain", "padding"])
@pytest.mark.parametrize("H, D", [(1, 4), (3, 5)])
@pytest.mark.parametrize("B, T", SHAPES)
def test_reference_attention_matches_sdpa(B, T, H, D, padding):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    mask = right_padding(B, T) if padding else None
    out = causal_attention(q, k, v, attention_mask=mask)
    assert out.shape == (B, H, T, D)
    expected = torch_attention(q, k, v, mask, is_causal=True)
    if mask is None:
        torch.testing.assert_close(out, expected, atol=ATOL, rtol=RTOL)
    else:  # graded query positions only: (B, H, T, D) -> (B, T, H, D)[mask]
        assert_close_graded(out.transpose(1, 2), expected.transpose(1, 2), mask)


def test_reference_runs_on_meta_device():
    q = torch.empty(2, 3, 5, 4, device="meta")
    out = causal_attention(q, q, q, attention_mask=torch.ones(2, 5, dtype=torch.bool, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 3, 5, 4)


def test_a_tie_is_decided_by_the_rows_of_the_cases_it_shows_in(graded):
    """Padding ignored only when it is on the left, in a causal exercise: on the graded rows that is
    also what a mask on the query rows computes; the padded rows of the left-padded cases (where it
    shows) tell them apart, and only the one that reproduces them is named, with those cases."""
    result = graded(Path(__file__).parent / "corpus" / "causal" / "left_padding_dropped_when_all_real_first.py")
    assert [d.id for d in result.diagnoses] == ["padding_mask_ignored"]
    group = next(e for e in result.diagnoses[0].evidence if e.key == "evidence.case_group")
    assert "left-padded" in group.params["cases"] and "right" not in group.params["cases"]


def test_an_additive_float_mask_stands_for_its_bool_mask():
    """CLIP's build_attention_mask (0 / -inf) and a -1e9 fill read as the bool mask they stand for,
    so returning one is named mask_dtype (round 9's causal/clip_build_attention_mask_float_pad_inverted)."""
    import torch

    from attnprep.grader.kinds.attention_functions import _additive

    clip = torch.empty(3, 3).fill_(float("-inf")).triu_(1)
    assert _additive(clip) == torch.ones(3, 3, dtype=torch.bool).tril().int().tolist()
    assert _additive(torch.zeros(2, 2).masked_fill(torch.eye(2, dtype=torch.bool), -1e9)) == [[0, 1], [1, 0]]
    assert _additive(torch.ones(2, 2).tril()) is None  # a 0/1 float mask is the other form
    assert _additive(torch.ones(2, 2, dtype=torch.bool)) is None
