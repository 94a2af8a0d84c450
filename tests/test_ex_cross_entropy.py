"""cross_entropy (kind tensor_functions): the reference against F.cross_entropy on every graded case,
where each named mistake shows (which cases), the two-mistake attempts, and the built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises
from attnprep.grader.kinds import kind_for
from attnprep.grader.edits import EditError, edited_source
from test_grader import header


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "tensor_functions",
    "objects": ("cross_entropy",),
    "signatures": {"cross_entropy": "logits, targets, ignore_index=-100, label_smoothing=0.0"},
    "returns": "0-d tensor, the logits' dtype",
}

EX = exercises.get("cross_entropy")
PAIRS = Path(__file__).parent / "corpus" / "cross_entropy" / "pairs"


def _torch_loss(case) -> torch.Tensor:
    i = case.inputs
    V = i["logits"].shape[-1]
    return F.cross_entropy(i["logits"].double().reshape(-1, V), i["targets"].reshape(-1), **i["_args"])


@pytest.fixture(scope="module")
def kind():
    return kind_for(EX, 0)


def test_the_reference_is_torchs_cross_entropy_on_every_graded_case(kind):
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        for case in kind.cases(ci):
            got = reference(case)["loss"]
            assert got.shape == () and torch.allclose(got, _torch_loss(case), rtol=1e-12, atol=1e-12), case.name
            # and in float32, as an attempt runs it, within the case's tolerance
            f32 = kind.trail_reference(ci)(case)["loss"]
            rtol, atol = case.tolerance or (1e-4, 1e-5)
            assert f32.dtype == torch.float32 and torch.isclose(f32.double(), _torch_loss(case), rtol=rtol, atol=atol)


def test_the_cases_hold_what_the_contract_promises(kind):
    cases = kind.cases(0)
    big = [c for c in cases if c.inputs["logits"].abs().max() > 1e3]
    assert len(big) >= 2 and all(c.tolerance is not None for c in big)  # up to 1e4: a few ulps of it
    assert max(float(c.inputs["logits"].abs().max()) for c in cases) > 9e3
    ignored = [c for c in cases if (c.inputs["targets"] == c.inputs["_args"].get("ignore_index", -100)).any()]
    assert {c.inputs["_args"].get("ignore_index", -100) for c in ignored} == {-100, -1, 0}  # 0: a class id as well
    assert all((c.inputs["targets"] != c.inputs["_args"].get("ignore_index", -100)).any() for c in cases)
    assert {c.inputs["logits"].dim() for c in cases} == {2, 3}
    assert sum(c.observe for c in cases) == 1 and sum(c.grads for c in cases) == 1
    assert next(c for c in cases if c.grads).inputs["_args"].get("label_smoothing")  # gradients through the smoothing


# where each mistake shows: a mistake confined to some cases changes exactly those
SHOWS = {
    # float32's exp overflows above ~88.7, and a row whose every exp underflows sums to 0
    "cross_entropy_no_max": lambda c: bool(c.inputs["logits"].max() > 88.8 or c.inputs["logits"].amax(-1).min() < -103.9),
    "cross_entropy_mean_includes_ignored": lambda c: bool((c.inputs["targets"] == c.inputs["_args"].get("ignore_index", -100)).any()),
    "ignore_index_hardcoded": lambda c: c.inputs["_args"].get("ignore_index", -100) != -100 and bool(
        (c.inputs["targets"] == c.inputs["_args"]["ignore_index"]).any()),
    "label_smoothing_ignored": lambda c: bool(c.inputs["_args"].get("label_smoothing")),
    "cross_entropy_sum_not_mean": lambda c: int((c.inputs["targets"] != c.inputs["_args"].get("ignore_index", -100)).sum()) > 1,
    # (on logits of ±1e4 the loss is thousands: the difference may be within the case's tolerance)
    "label_smoothing_over_v_minus_1": lambda c: bool(c.inputs["_args"].get("label_smoothing")) if c.tolerance is None else None,
}


@pytest.mark.parametrize("knob", sorted(SHOWS))
def test_a_mistake_shows_exactly_in_its_cases(kind, knob):
    for ci in range(len(kind.configs)):
        reference, variant = kind.reference(ci), kind.variant(ci, frozenset(), knob, 0.0)
        for case in kind.cases(ci):
            want, got = reference(case)["loss"], variant(case)["loss"].double()
            rtol, atol = case.tolerance or (1e-4, 1e-5)
            same = bool(torch.isclose(got, want, rtol=rtol, atol=atol))
            shows = SHOWS[knob](case)
            assert shows is None or same != shows, (ci, case.name, float(got), float(want))


def test_softmax_then_log_and_no_max_part_on_the_large_cases(kind):
    """Each of the two numerical mistakes is told apart from the other: near 1e4 the softmax is fine and
    the exp overflows; on -|x| * 150 the exp is fine and the probabilities underflow."""
    cases = {c.name: c for c in kind.cases(0)}
    no_max = kind.variant(0, frozenset(), "cross_entropy_no_max", 0.0)
    log_of_softmax = kind.variant(0, frozenset(), "cross_entropy_softmax_then_log", 0.0)
    near, spread = cases["logits near 1e4"], cases["logits -|x| * 150"]
    assert not torch.isfinite(no_max(near)["loss"]) and torch.isfinite(log_of_softmax(near)["loss"])
    assert torch.isfinite(no_max(spread)["loss"]) and not torch.isfinite(log_of_softmax(spread)["loss"])


def test_edits_apply_once_or_not_at_all():
    assert edited_source("a = 1\nb = 2\n", [{"old": "b = 2", "new": "b = 3"}]) == "a = 1\nb = 3\n"
    with pytest.raises(EditError):
        edited_source("a = 1\na = 1\n", [{"old": "a = 1", "new": "a = 2"}])
    with pytest.raises(EditError):
        edited_source("a = 1\n", [{"old": "c = 1", "new": "c = 2"}])
    source = EX.solution_path.read_text(encoding="utf-8")
    for knob in EX.grading["knobs"]:
        assert edited_source(source, EX.grading["edits"][knob]) != source, knob


@pytest.mark.parametrize("path", sorted(PAIRS.glob("*.py")), ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    expect, diagnosis = header(path)
    result = graded(path)
    assert result.verdict.value == expect
    assert [d.id for d in result.diagnoses] == [d.strip() for d in diagnosis.split("+")]


@pytest.mark.parametrize("call", [
    "torch.log_softmax(x, dim=-1)", "x.log_softmax(-1)", "torch.nn.LogSoftmax(dim=-1)(x)",
    "torch.special.log_softmax(x, -1)", "x - torch.special.logsumexp(x, -1, keepdim=True)",
    "x - x.logsumexp(-1, keepdim=True)",
])
def test_the_log_softmax_family_is_a_built_in_however_called(call, tmp_path, graded):
    path = tmp_path / "cross_entropy.py"
    path.write_text(
        "import torch\n\n\ndef cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):\n"
        "    x = logits.reshape(-1, logits.size(-1))\n"
        f"    logp = {call}\n"
        "    t = targets.reshape(-1)\n    keep = t != ignore_index\n"
        "    nll = -logp.gather(1, t.clamp(min=0)[:, None]).squeeze(1)\n"
        "    nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)\n"
        "    return nll[keep].mean()\n", encoding="utf-8")
    result = graded(path, "cross_entropy")
    assert result.verdict.value == "used_builtin", result.checks


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"min": 40, "sample": 5, "families": {"constant", "arith", "compare", "mask_drop", "mask_negate", "sign"}}


def test_a_named_mistake_says_the_group_of_cases_it_shows_in(graded):
    """Issue 24: a mistake that changes only some cases (an ignore_index other than -100) is named
    with those cases, the others said to match; one that shows almost everywhere is named alone."""
    corpus = Path(__file__).parent / "corpus" / "cross_entropy"
    (named,) = graded(corpus / "ignore_index_hardcoded.py").diagnoses
    assert named.id == "ignore_index_hardcoded"
    assert [e.key for e in named.evidence] == ["evidence.variant", "evidence.case_group"]
    group = named.evidence[1]
    assert group.params["cases"] == "(N, V), ignore_index=-1, (B, T, V), ignore_index=0, (N, V), ignore_index=-1, label_smoothing=0.3" and group.params["others"] > 0
    with_group, without = set(), set()
    for path in sorted(corpus.glob("*.py")):
        for d in graded(path).diagnoses:
            groups = [e for e in d.evidence if getattr(e, "key", "") == "evidence.case_group"]
            assert len(groups) <= 1, (path.name, d.id)
            assert all(g.params["others"] > 0 for g in groups), path.name
            (with_group if groups else without).add(d.id)
    assert "label_smoothing_ignored" in with_group  # only the cases with label_smoothing > 0
    assert without, "a mistake that shows in most cases is named without a group"
