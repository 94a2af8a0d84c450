"""sdpa: the reference against torch (softmax and F.scaled_dot_product_attention on many shapes),
what the grader's cases cover (SPEC: L != S, Ev != E, 3-D and 4-D, bool and float masks, is_causal,
scale, magnitudes where a naive softmax overflows, -inf entries), and the softmax family recognised
as a built-in whichever way it is called."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises
from attnprep.grader import grade
from attnprep.grader.kinds import kind_for
from attnprep.grader.result import Verdict
from attnprep.solutions.sdpa import scaled_dot_product_attention, softmax
from per_exercise import same, variant_outputs


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "sdpa_functions",
    "objects": ("softmax", "scaled_dot_product_attention"),
    "signatures": {"softmax": "x, dim=-1",
                   "scaled_dot_product_attention": "query, key, value, attn_mask=None, is_causal=False, scale=None"},
    "returns": "(..., L, Ev)",
}

EX = exercises.get("sdpa")
G = torch.Generator().manual_seed(0)


@pytest.mark.parametrize(("shape", "dim"), [((5,), 0), ((3, 7), -1), ((3, 7), 0), ((2, 4, 6), 1), ((2, 3, 4, 5), -2),
                                             ((2, 3, 4, 5), 3), ((1, 1), -1)])
@pytest.mark.parametrize("magnitude", [1.0, 50.0, 1e4])
def test_softmax_equals_torch(shape, dim, magnitude):
    x = torch.randn(*shape, generator=G) * magnitude
    torch.testing.assert_close(softmax(x, dim=dim), torch.softmax(x, dim=dim))
    torch.testing.assert_close(softmax(x - 1e4, dim=dim), torch.softmax(x - 1e4, dim=dim))  # all very negative


def test_softmax_gives_zero_to_neg_inf_entries_and_keeps_the_default_dim():
    x = torch.randn(4, 6, generator=G) * 1e4
    x[0, :3] = float("-inf")
    x[2, 5] = float("-inf")
    got = softmax(x)
    torch.testing.assert_close(got, torch.softmax(x, dim=-1))
    assert (got[0, :3] == 0).all() and got[2, 5] == 0
    x[1] = float("-inf")  # a row of only -inf is NaN, as in torch, and never graded
    assert torch.isnan(softmax(x)[1]).all() and torch.isnan(torch.softmax(x, -1)[1]).all()
    naive = x.exp() / x.exp().sum(-1, keepdim=True)
    assert not torch.isfinite(naive[3]).all()  # what the stability cases catch


def _inputs(lead, L, S, E, Ev, dtype=torch.float64):
    g = torch.Generator().manual_seed(L * 100 + S * 10 + E)
    return (torch.randn(*lead, L, E, generator=g, dtype=dtype), torch.randn(*lead, S, E, generator=g, dtype=dtype),
            torch.randn(*lead, S, Ev, generator=g, dtype=dtype))


SHAPES = [((2, 3), 5, 7, 4, 6), ((3,), 6, 4, 16, 3), ((1, 2), 1, 5, 6, 6), ((2, 1), 4, 4, 5, 2), ((2,), 9, 3, 8, 8)]


@pytest.mark.parametrize(("lead", "L", "S", "E", "Ev"), SHAPES)
def test_reference_equals_torch_sdpa(lead, L, S, E, Ev):
    q, k, v = _inputs(lead, L, S, E, Ev)
    g = torch.Generator().manual_seed(1)
    B = lead[0]
    key_mask = torch.rand(B, S, generator=g) < 0.6
    key_mask[:, 0] = True
    key_mask = key_mask.reshape(B, *([1] * (len(lead) - 1)), 1, S)
    ls_mask = torch.rand(L, S, generator=g) < 0.5
    ls_mask[:, -1] = True
    full = torch.randn(*lead, L, S, generator=g, dtype=q.dtype)
    full[..., 1] = float("-inf")
    calls = [dict(), dict(scale=0.37), dict(is_causal=True), dict(attn_mask=key_mask), dict(attn_mask=ls_mask),
             dict(attn_mask=full), dict(attn_mask=torch.zeros(1, S, dtype=q.dtype).masked_fill(~key_mask.flatten()[None, :S], -1e9))]
    for kwargs in calls:
        torch.testing.assert_close(scaled_dot_product_attention(q, k, v, **kwargs),
                                   F.scaled_dot_product_attention(q, k, v, **kwargs), msg=str(kwargs))


def test_is_causal_is_top_left_when_L_differs_from_S():
    q, k, v = _inputs((1,), 2, 5, 4, 3)
    out = scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out[0, 0], v[0, 0])  # query 0 sees key 0 only, whatever S is
    bottom_right = kind_for(EX).edited.namespace(("causal_bottom_right",))["scaled_dot_product_attention"](q, k, v, is_causal=True)
    assert not torch.allclose(out, bottom_right)
    torch.testing.assert_close(bottom_right[0, 1], F.scaled_dot_product_attention(q, k, v)[0, 1])  # the last query sees all


def test_the_cases_cover_what_the_contract_says_is_graded():
    kind = kind_for(EX)
    configs = kind.configs
    assert any(c["L"] < c["S"] for c in configs) and any(c["L"] > c["S"] for c in configs)
    assert any(c["L"] == 1 for c in configs)
    assert sum(c["E"] != c["Ev"] for c in configs) >= 2
    assert any(c["heads"] == 0 for c in configs) and any(c["heads"] for c in configs)  # 3-D and 4-D
    seen = set()
    for ci, c in enumerate(configs):
        for case in kind.cases(ci):
            i = case.inputs
            if "x" in i:
                x = i["x"]
                seen.add(("softmax dim", i["dim"]))
                if x[torch.isfinite(x)].abs().max() > 5e3:
                    seen.add("softmax 1e4")
                if torch.isneginf(x).any():
                    seen.add("softmax -inf")
                continue
            assert i["query"].dim() == (4 if c["heads"] else 3)
            m = i["attn_mask"]
            if m is not None:
                seen.add((m.dtype, m.dim() == i["query"].dim(), tuple(m.shape[-2:]) == (c["L"], c["S"])))
            if i["is_causal"]:
                seen.add("causal")
            if i["scale"] is not None:
                seen.add("scale")
            scores = i["query"].double() @ i["key"].double().transpose(-2, -1) / math.sqrt(c["E"])
            if scores.abs().max() > 200:
                seen.add("large")
                f32 = i["query"] @ i["key"].transpose(-2, -1) * (1 / math.sqrt(c["E"]))
                assert torch.equal(f32.double(), scores)  # exact in float32: no order of computing them differs
                assert not torch.isfinite(scores.float().exp()).all()  # a naive exp overflows here
    assert {"causal", "scale", "large", "softmax 1e4", "softmax -inf", ("softmax dim", None), ("softmax dim", 0),
            ("softmax dim", 1), ("softmax dim", -2)} <= seen
    assert (torch.bool, False, True) in seen  # bool (L, S) broadcast
    assert (torch.bool, True, False) in seen  # bool key mask (B, 1, 1, S)
    assert (torch.float32, True, True) in seen  # float, given in full
    assert (torch.float32, True, False) in seen  # float key mask (Hugging Face's 0 / finfo.min)


def test_causal_and_masks_never_combined_and_graded_rows_have_a_key():
    kind = kind_for(EX)
    for ci in range(len(kind.configs)):
        for case in kind.cases(ci):
            i = case.inputs
            if "x" in i:
                continue
            assert not (i["is_causal"] and i["attn_mask"] is not None)
            out = kind.reference(ci)(case)["out"]
            where = case.mask("out", tuple(out.shape))
            assert torch.isfinite(out[where]).all(), case.name


FORBIDDEN = {
    "torch.softmax": "torch.softmax(x, dim)",
    "F.softmax": "F.softmax(x, dim=dim)",
    "Tensor.softmax": "x.softmax(dim)",
    "nn.Softmax": "torch.nn.Softmax(dim=dim)(x)",
    "log_softmax": "torch.exp(F.log_softmax(x, dim=dim))",
    "logsumexp": "torch.exp(x - x.logsumexp(dim, keepdim=True))",
    "softmin": "F.softmin(-x, dim=dim)",
    "special.softmax": "torch.special.softmax(x, dim)",
    "aten": "torch.ops.aten._softmax(x, dim, False)",
}


@pytest.mark.parametrize("how", list(FORBIDDEN))
def test_every_softmax_builtin_is_recognised(how, tmp_path):
    source = (f"# attnprep: sdpa\nimport math\nimport torch\nimport torch.nn.functional as F\n\n\n"
              f"def softmax(x, dim=-1):\n    return {FORBIDDEN[how]}\n\n\n"
              "def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):\n"
              "    s = query @ key.transpose(-2, -1) * (1 / math.sqrt(query.size(-1)) if scale is None else scale)\n"
              "    L, S = s.shape[-2:]\n"
              "    if is_causal:\n"
              "        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), float('-inf'))\n"
              "    if attn_mask is not None:\n"
              "        s = s.masked_fill(~attn_mask, float('-inf')) if attn_mask.dtype == torch.bool else s + attn_mask\n"
              "    return softmax(s) @ value\n")
    path = tmp_path / "sdpa.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    assert result.verdict is Verdict.BUILTIN, (how, result.checks, result.error)
    assert [d.id for d in result.diagnoses] == ["used_builtin"]


def test_large_softmax_inputs_allow_an_ulp_of_the_inputs_and_the_heat_map_uses_the_heads_mask(graded):
    """exp(x - logsumexp) by hand rounds the log-sum-exp of inputs near 1e4 (about 3e-4 relative):
    a correct softmax. Its heat-map shows head 2 of the per-head float mask: the allowed cells are
    that head's, so nothing reads as a leak."""
    from pathlib import Path

    result = graded(Path(__file__).parent / "corpus" / "sdpa" / "ok_logsumexp_by_hand.py")
    assert result.passed, result.checks
    h = result.heatmap
    assert h is not None and h.got is not None
    leaks = [(i, j) for i, row in enumerate(h.got) for j, p in enumerate(row)
             if h.graded[i] and not h.allowed[i][j] and p > 0.01]
    assert leaks == []
    kind = kind_for(EX)
    case = next(c for c in kind.cases(0) if c.name == "float mask (full)")
    per_head = kind.allowed(case, 1)
    assert per_head.dim() == 3 and not all(bool((per_head[0] == m).all()) for m in per_head)


def test_the_finite_row_names_each_case_once_and_quoted(graded):
    """Issue 30 §3: "in is_causal, is_causal, later keys changed" read as a case listed twice; the
    second is one case whose name has a comma. Each name is quoted, none repeated."""
    import re
    from pathlib import Path

    from attnprep import texts

    result = graded(Path(__file__).parent / "corpus" / "sdpa" / "causal_masks_diagonal.py")
    finite = next(c for c in result.checks if c.id == "finite")
    assert finite.passed is False
    text = texts.render(finite.message, "en")
    names = re.findall(r"'([^']*)'", text)
    assert names and len(names) == len(set(names)) and "is_causal, later keys changed" in names, text


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)",)
FIX_SAYS = {"scale_by_dim": "q.size(-1)", "causal_flag_inverted": "device=q.device"}


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


PAIRS = [("bool_mask_inverted", "scale_inverted"), ("missing_scale", "causal_masks_diagonal"),
         ("softmax_unstable:attention", "softmax_wrong_dim"), ("scale_after_softmax", "mask_fill_zero"),
         ("softmax_global_max", "causal_leaks_next"), ("scale_argument_ignored", "scale_by_dim"),
         ("float_mask_ignored", "missing_scale:default"), ("mask_after_softmax", "scale_inverted:argument"),
         ("causal_bottom_right", "softmax_unstable"), ("attn_mask_ignored", "softmax_max_wrong_dim")]


def test_the_other_fill_is_written_where_the_reference_fills():
    """-1e9 replaces the reference's float("-inf") in every mask, edits included; the variant's outputs
    differ from -inf's only on rows every key of which is blocked (NaN with -inf, a mean with -1e9)."""
    kind = kind_for(EX, seed=0)
    source = kind.edited.source(("float_mask_as_bool",), -1e9)
    assert 'float("-inf")' not in source and source.count("-1000000000.0") == 3
    ci = 1  # L = 6 > S = 4: the last queries see no key j > i
    for case, low, inf in zip(kind.cases(ci), variant_outputs(kind, ci, "causal_inverted:strict", -1e9),
                              variant_outputs(kind, ci, "causal_inverted:strict")):
        for name in inf:
            nan_rows = inf[name].isnan()
            if case.inputs.get("attn_mask") is None and "x" not in case.inputs:  # no -inf of the inputs' own
                assert not low[name].isnan().any()
            assert same(case, low[name].masked_fill(nan_rows, 0), inf[name].masked_fill(nan_rows, 0))
            if case.inputs.get("is_causal"):
                assert nan_rows.any()  # the last query sees no key j > i


@pytest.mark.parametrize("pair", PAIRS, ids=str)
def test_two_edits_compose(pair):
    """Two knobs at once are both edits made: the pair's source is the one's edits then the
    other's, and its outputs differ somewhere from the reference and from each knob alone."""
    from attnprep.grader.edits import edited_source

    kind = kind_for(EX, seed=0)
    source = EX.solution_path.read_text(encoding="utf-8")
    assert kind.edited.source(pair) == edited_source(edited_source(source, EX.grading["edits"][pair[0]]),
                                                     EX.grading["edits"][pair[1]])
    apart = {"reference": False, pair[0]: False, pair[1]: False}
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        alone = dict(zip(pair, (variant_outputs(kind, ci, k) for k in pair)))
        for n, (case, both) in enumerate(zip(kind.cases(ci), variant_outputs(kind, ci, pair))):
            with torch.no_grad():
                want = reference(case)
            for name in both:
                apart["reference"] |= not same(case, both[name], want[name])
                for k in pair:
                    apart[k] |= not same(case, both[name], alone[k][n][name])
    assert all(apart.values()), (pair, apart)


def test_two_knobs_are_both_made():
    """The variants take two knobs at once: the pair differs from each of its knobs alone on some
    case (neither is dropped)."""
    from attnprep.grader.kinds import kind_for

    pair = ("bool_mask_inverted", "scale_argument_ignored")
    kind = kind_for(EX, 0)
    cases = kind.cases(0)
    both = variant_outputs(kind, 0, pair)
    for alone in (variant_outputs(kind, 0, k) for k in pair):
        assert any(not same(c, b[n], a[n]) for c, b, a in zip(cases, both, alone) for n in b), pair
