"""sampling (kind tensor_functions): the reference against Hugging Face's warpers written out here,
the graded inputs' promises (cumulative sums away from top_p, no ties at the k-th value, rows where
the most probable token alone passes top_p), where each named mistake shows, the two-mistake attempts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader.kinds import kind_for
from test_grader import header


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "tensor_functions",
    "objects": ("sampling_probs",),
    "signatures": {"sampling_probs": "logits, temperature=1.0, top_k=0, top_p=1.0"},
    "returns": "(B, V) probabilities",
}

EX = exercises.get("sampling")
PAIRS = Path(__file__).parent / "corpus" / "sampling" / "pairs"


def hf_probs(logits: torch.Tensor, temperature=1.0, top_k=0, top_p=1.0) -> torch.Tensor:
    """TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper (transformers), then softmax."""
    scores = logits.double() / temperature
    if top_k:
        scores = scores.masked_fill(scores < torch.topk(scores, min(top_k, scores.size(-1)))[0][..., -1, None], -float("inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative_probs <= (1 - top_p)
        remove[..., -1:] = 0
        scores = scores.masked_fill(remove.scatter(1, sorted_indices, remove), -float("inf"))
    return scores.softmax(dim=-1)


@pytest.fixture(scope="module")
def kind():
    return kind_for(EX, 0)


def _args(case) -> dict:
    return case.inputs["_args"]


def test_the_reference_is_hugging_faces_warpers_on_every_graded_case(kind):
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        for case in kind.cases(ci):
            got = reference(case)["probs"]
            want = hf_probs(case.inputs["logits"], **_args(case))
            assert torch.allclose(got, want, rtol=0, atol=1e-12), case.name
            assert torch.allclose(got.sum(-1), torch.ones(got.shape[0], dtype=got.dtype))
            assert ((got == 0) == (want == 0)).all()  # removed tokens exactly 0


def test_graded_inputs_keep_their_promises(kind):
    peaked = 0
    for ci in range(len(kind.configs)):
        for case in kind.cases(ci):
            a = _args(case)
            z = case.inputs["logits"].double() / a.get("temperature", 1.0)
            if a.get("top_k"):
                k = a["top_k"]
                top = z.sort(-1, descending=True).values
                if k < z.size(-1):
                    assert (top[:, k - 1] > top[:, k]).all(), case.name  # no tie at the k-th value
                z = z.masked_fill(z < top[:, k - 1:k], float("-inf"))
            if a.get("top_p", 1.0) < 1.0:
                sums = z.softmax(-1).sort(-1, descending=True).values.cumsum(-1)
                assert ((sums - a["top_p"]).abs() >= 1e-4).all(), case.name
                peaked += int((sums[:, 0] > a["top_p"]).sum())
    assert peaked > 0, "no row whose most probable token alone passes top_p"
    names = [c.name for c in kind.cases(0)]
    assert any(_args(c).get("top_k") and _args(c).get("top_p", 1.0) < 1 for c in kind.cases(0)), names
    assert sum(c.check == "batch" for c in kind.cases(0)) == 1


SHOWS = {  # where each mistake may show: never elsewhere, and somewhere
    "temperature_after_softmax": lambda a: a.get("temperature", 1.0) != 1.0,
    "temperature_multiplied": lambda a: a.get("temperature", 1.0) != 1.0,
    "top_p_drops_crossing": lambda a: a.get("top_p", 1.0) < 1.0,
    "top_p_not_sorted": lambda a: a.get("top_p", 1.0) < 1.0,
    "top_p_before_top_k": lambda a: a.get("top_p", 1.0) < 1.0 and bool(a.get("top_k")),
    "sampling_not_renormalised": lambda a: a.get("top_p", 1.0) < 1.0 or bool(a.get("top_k")),
}


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_a_mistake_shows_only_in_its_cases(kind, knob):
    shown = False
    for ci in range(len(kind.configs)):
        reference, variant = kind.reference(ci), kind.variant(ci, frozenset(), knob, 0.0)
        for case in kind.cases(ci):
            same = torch.allclose(variant(case)["probs"].double(), reference(case)["probs"], rtol=1e-4, atol=1e-5)
            may = SHOWS[knob.split(":")[0]](_args(case))
            assert same or may, (ci, case.name)
            shown |= not same
    assert shown


def test_the_descending_rule_and_hugging_faces_ascending_complement_keep_the_same_tokens():
    g = torch.Generator().manual_seed(5)
    reference = kind_for(EX, 0).solution()["sampling_probs"]
    for top_p in (0.3, 0.6, 0.9):
        logits = torch.randn(6, 20, generator=g, dtype=torch.float64) * 2
        assert torch.allclose(reference(logits, top_p=top_p), hf_probs(logits, top_p=top_p), atol=1e-12)


@pytest.mark.parametrize("path", sorted(PAIRS.glob("*.py")), ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    expect, diagnosis = header(path)
    result = graded(path)
    assert result.verdict.value == expect
    assert [d.id for d in result.diagnoses] == [d.strip() for d in diagnosis.split("+")]


def test_a_case_whose_threshold_cannot_be_kept_away_is_refused():
    """``stable`` redraws the inputs; a top_p that every draw sits on (a uniform row's cumulative
    sums are multiples of 1/V) is an error in the exercise's data, said at once."""
    from attnprep.grader.kinds.tensor_functions import TensorFunctions

    grading = {**EX.grading, "configs": [{"B": 1, "V": 4}],
               "cases": [{"name": "flat", "observe": True, "args": {"top_p": 0.5}, "stable": {"top_p": 1e-4},
                          "inputs": {"logits": {"shape": ["B", "V"], "scale": 0.0}}}]}
    with pytest.raises(ValueError, match="stable"):
        TensorFunctions(EX._replace(grading=grading), 0)


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"min": 40, "sample": 5, "families": {"constant", "softmax_dim", "compare", "mask_combine", "mask_drop",
                                                  "mask_negate", "split_order"}}
