"""alibi: the slopes against the paper's code and written-out values, the reference against torch's
SDPA with the bias as a float mask, BLOOM's and MPT's bias forms (the same attention), the kind's
slope and bias knobs (each one nameable, the non-power-of-two rule only where H is not a power of
two), the slopes function graded on its own, two-mistake attempts named, and each knob as an edit
of the reference that gives what its variant built in code gave."""

from __future__ import annotations

import math
from pathlib import Path

import functional_variants
import pytest
import torch
import torch.nn.functional as F
from attnprep.grader import variants
from attnprep.grader.kinds import kind_for
from attnprep.solutions.alibi import alibi_attention, alibi_slopes

from attnprep import exercises

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "biased_attention",
    "objects": ("alibi_slopes", "alibi_attention"),
    "signatures": {"alibi_slopes": "num_heads", "alibi_attention": "q, k, v, attention_mask=None"},
}

EX = exercises.get("alibi")
TWO = Path(__file__).parent / "corpus" / "alibi" / "two"


def paper_slopes(n: int) -> list[float]:
    """ofirpress/attention_with_linear_biases, get_slopes, as published."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][: n - closest]


def is_power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


@pytest.mark.parametrize("H", list(range(1, 41)))
def test_slopes_are_the_papers(H):
    got = alibi_slopes(H)
    assert got.dtype == torch.float32 and got.shape == (H,)
    torch.testing.assert_close(got, torch.tensor(paper_slopes(H), dtype=torch.float32))
    torch.testing.assert_close(functional_variants.slopes(H), got)


def test_slopes_written_out():
    assert alibi_slopes(8).tolist() == [2.0**-e for e in range(1, 9)]
    assert alibi_slopes(4).tolist() == [2.0**-e for e in (2, 4, 6, 8)]
    assert alibi_slopes(6).tolist() == [2.0**-e for e in (2, 4, 6, 8, 1, 3)]
    assert alibi_slopes(1).tolist() == [2.0**-8]


@pytest.mark.parametrize(("B", "H", "T", "D"), [(1, 1, 1, 4), (2, 3, 7, 5), (3, 8, 9, 4), (1, 6, 12, 3)])
@pytest.mark.parametrize("padded", [False, True])
def test_reference_equals_torch_sdpa_with_the_bias_as_a_float_mask(B, H, T, D, padded):
    g = torch.Generator().manual_seed(B * 100 + H * 10 + T)
    q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    bias = -alibi_slopes(H).double()[:, None, None] * (i - j)  # (H, T, T)
    allowed = (j <= i)[None, None]
    mask = None
    if padded:
        starts = T - torch.randint(1, T + 1, (B,), generator=g)  # left padding
        mask = torch.arange(T)[None, :] >= starts[:, None]
        allowed = allowed & mask[:, None, None, :]
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~allowed, float("-inf")))
    got = alibi_attention(q, k, v, mask)
    rows = (torch.ones(B, T, dtype=torch.bool) if mask is None else mask)[:, None, :].expand(B, H, T)
    torch.testing.assert_close(got[rows], want[rows])


@pytest.mark.parametrize("form", ["key_only", "mpt"])
def test_bloom_and_mpt_bias_forms_give_the_same_attention(form):
    """-slope·(i - j), slope·j and slope·(j - (T - 1)) differ by a constant per row: one softmax."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 6, 7, 4, generator=g) for _ in range(3))
    s = alibi_slopes(6)
    ref = functional_variants.masked(q, k, v, None, bias=functional_variants.distance_bias(s, 7))
    torch.testing.assert_close(functional_variants.masked(q, k, v, None, bias=functional_variants.distance_bias(s, 7, form)), ref)
    torch.testing.assert_close(ref, alibi_attention(q, k, v))
    # the forms are not the same bias: only after the softmax they agree
    assert not torch.allclose(functional_variants.distance_bias(s, 7, form), functional_variants.distance_bias(s, 7))


def test_attend_adds_its_bias_to_the_scaled_scores_before_the_masks():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, 5, 3, generator=g) for _ in range(3))
    bias = torch.randn(2, 5, 5, generator=g)
    scores = q @ k.transpose(-2, -1) / math.sqrt(3) + bias
    want = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")).softmax(-1) @ v
    torch.testing.assert_close(functional_variants.attend(q, k, v, None, True, 1 / math.sqrt(3), bias=bias), want)
    assert torch.equal(functional_variants.attend(q, k, v, None, True, 0.5), functional_variants.attend(q, k, v, None, True, 0.5, bias=None))


def test_slope_knobs():
    assert functional_variants.slopes(8, "alibi_slopes_reversed").tolist() == alibi_slopes(8).flip(0).tolist()
    assert functional_variants.slopes(6, "alibi_pow2_rule_ignored").tolist() == torch.tensor([2 ** (-8 * i / 6) for i in range(1, 7)]).tolist()
    for H in (1, 2, 4, 8, 16):  # the rule only changes a head count that is not a power of two
        assert torch.equal(functional_variants.slopes(H, "alibi_pow2_rule_ignored"), functional_variants.slopes(H))
    both = functional_variants.slopes(6, ("alibi_pow2_rule_ignored", "alibi_slopes_reversed"))
    assert both.tolist() == functional_variants.slopes(6, "alibi_pow2_rule_ignored").flip(0).tolist()


def test_configs_have_both_kinds_of_head_count_and_slope_checks_too():
    heads = [c["heads"] for c in EX.grading["configs"]]
    assert any(is_power_of_two(h) for h in heads) and any(not is_power_of_two(h) for h in heads)
    checks = EX.grading["slope_checks"]
    assert any(is_power_of_two(h) for h in checks) and any(not is_power_of_two(h) for h in checks)


def test_every_knob_is_the_reference_without_its_mistake_and_differs_with_it():
    kind = kind_for(EX)
    for ci in range(len(kind.configs)):
        case = next(c for c in kind.cases(ci) if c.name == "padded+causal")
        ref = kind.reference(ci)(case)["out"]
        plain = kind.variant(ci, frozenset(), "", float("-inf"))(case)["out"]
        rows = case.mask("out", tuple(ref.shape))
        torch.testing.assert_close(plain[rows], ref[rows])
    for knob in kind.knobs():
        differs = []
        for ci in range(len(kind.configs)):
            out = {}
            for case in kind.cases(ci):
                if case.name not in ("padded+causal", "left-padded+causal", "plain+causal"):
                    continue
                got = kind.variant(ci, frozenset(), knob, -1e9)(case)["out"]
                want = kind.reference(ci)(case)["out"]
                rows = case.mask("out", tuple(want.shape))
                out[case.name] = not torch.allclose(got[rows], want[rows], atol=1e-5)
            differs.append(any(out.values()))
        assert any(differs), knob
        if knob == "alibi_pow2_rule_ignored":  # a case-group mistake: only where H is not a power of two
            assert differs == [not is_power_of_two(c["heads"]) for c in kind.configs]


def test_the_slopes_function_is_checked_and_named_on_its_own():
    from attnprep.solutions import alibi as solution

    kind = kind_for(EX)
    functions = {n: getattr(solution, n) for n in EX.contract.objects}
    extra = kind.child_extra(functions)
    assert {c.id: c.passed for c in kind.extra_checks(extra)} == {"slopes_function": True}
    assert kind.extra_diagnoses(extra) == []
    for mistake in ("alibi_slopes_reversed", "alibi_pow2_rule_ignored"):
        wrong = kind.child_extra({**functions, "alibi_slopes": lambda H, m=mistake: functional_variants.slopes(H, m)})
        assert {c.id: c.passed for c in kind.extra_checks(wrong)} == {"slopes_function": False}
        found = kind.extra_diagnoses(wrong)
        assert [d.id for d in found] == [mistake]
        heads = found[0].evidence[0].params["heads"]
        if mistake == "alibi_pow2_rule_ignored":  # says where it shows: the head counts that are not powers of two
            assert heads == ", ".join(str(h) for h in EX.grading["slope_checks"] if not is_power_of_two(h))
    as_list = kind.child_extra({**functions, "alibi_slopes": lambda H: functional_variants.slopes(H).tolist()})
    assert kind.extra_checks(as_list)[0].message.key == "biased_attention.wrong_type"
    as_double = kind.child_extra({**functions, "alibi_slopes": lambda H: functional_variants.slopes(H).double()})
    assert kind.extra_checks(as_double)[0].message.key == "biased_attention.wrong_dtype"


@pytest.mark.parametrize("path", sorted(TWO.glob("*.py")), ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expected = {i.strip() for i in lines[2].split(":", 1)[1].split(",")}
    assert len(expected) == 2
    result = graded(path)
    assert result.verdict.value == lines[1].split(":", 1)[1].strip()
    assert {d.id for d in result.diagnoses} == expected


def test_sdpa_chains_to_alibi():
    assert "alibi" in exercises.get("sdpa").follow_ups


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


def _code_variant(knob, fill):
    """The kind's variants as they were built in code before they were edits of the reference (kept
    here, frozen, as what each edit must reproduce)."""
    mistake = functional_variants.slips(knob)
    form = functional_variants.pick({"alibi_bias_after_softmax:key_only": "key_only", "alibi_bias_after_softmax:mpt": "mpt",
                          "alibi_no_causal_mask:symmetric": "symmetric"}, mistake, "relative")
    made = {m.split(":")[0] for m in mistake}

    def call(case):
        i = case.inputs
        q, k, v, mask = i["q"], i["k"], i["v"], i["attention_mask"]
        B, H, T, D = q.shape
        bias = functional_variants.distance_bias(functional_variants.slopes(H, mistake).to(q.dtype), T, form)
        if mistake == "alibi_bias_sign_flipped":
            bias = -bias
        if "alibi_no_causal_mask" in made:
            scale = functional_variants.head_scale(D, mistake)
            return {"out": functional_variants.attend(q, k, v, mask, False, scale, mistake, fill, bias=bias)}
        if "alibi_bias_after_softmax" in made:
            eye = torch.eye(T, dtype=q.dtype).expand(B, H, T, T)
            others = functional_variants.slips(tuple(m for m in mistake if m != "attn_times_k"))
            probs = functional_variants.masked(q, k, eye, mask, others, fill)
            allowed = functional_variants.band(T, T, None)[None, None]
            if mask is not None:
                allowed = allowed & mask[:, None, None, :]
            if "alibi_bias_after_softmax:everywhere" in mistake:  # added at the blocked positions too
                allowed = torch.ones_like(allowed)
            return {"out": (probs + bias.masked_fill(~allowed, 0.0)) @ (k if mistake == "attn_times_k" else v)}
        return {"out": functional_variants.masked(q, k, v, mask, mistake, fill, bias=bias)}

    return call


def _same(case, got, want) -> bool:
    """Equal within the case's tolerance everywhere, NaN where the other is NaN."""
    from attnprep.grader.judge import close

    got, want = got.double(), want.double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    return close(got, want, torch.ones_like(got, dtype=torch.bool), equal_nan=True, tolerance=case.tolerance)


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_every_knob_is_an_edit_that_applies_once_and_equals_its_code_variant(knob):
    """Each knob's edits are found once in the reference, and the edited reference gives what the
    code variant gave, on every case of every config, with each fill (and each fill per mask)."""
    from attnprep.grader.edits import edited_source

    source = EX.solution_path.read_text(encoding="utf-8")
    for edit in EX.grading["edits"][knob]:
        assert source.count(edit["old"]) == 1, edit
        source = edited_source(source, [edit])
    kind = kind_for(EX, seed=0)
    for ci in range(len(kind.configs)):
        for fill in (*variants.FILLS, *variants.MASK_FILLS):
            edited, code = kind.edited.namespace((knob,), fill), _code_variant(knob, fill)
            for case in kind.cases(ci):
                with torch.no_grad():
                    got, want = kind.call(edited, case), code(case)["out"]
                assert _same(case, got, want), (knob, ci, fill, case.name)


# Pairs of knobs on different texts. Of the 368 pairs of different mistakes, 21 edit one text twice
# (two scales, two causal masks) and clash, naming nothing; 9 make two slips on one mask or on the
# bias (alibi_bias_after_softmax with alibi_no_causal_mask, mask_after_softmax with
# mask_fill_zero:padding, ...) and now compose as written, where the code variant let one win.
PAIRS = [("alibi_slopes_reversed", "alibi_bias_sign_flipped"), ("alibi_pow2_rule_ignored", "alibi_slopes_from_zero"),
         ("alibi_bias_after_softmax", "alibi_bias_sign_flipped"), ("alibi_bias_after_softmax:mpt", "attn_times_k"),
         ("alibi_no_causal_mask", "missing_scale"), ("missing_scale", "causal_leaks_next"),
         ("padding_mask_inverted", "alibi_slopes_reversed"), ("mask_after_softmax", "alibi_bias_sign_flipped")]


@pytest.mark.parametrize("pair", PAIRS, ids=str)
def test_two_edits_equal_their_code_variant(pair):
    kind = kind_for(EX, seed=0)
    for ci in range(len(kind.configs)):
        for fill in variants.FILLS:
            edited, code = kind.edited.namespace(pair, fill), _code_variant(pair, fill)
            for case in kind.cases(ci):
                with torch.no_grad():
                    assert _same(case, kind.call(edited, case), code(case)["out"]), (pair, ci, fill, case.name)
