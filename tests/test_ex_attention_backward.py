"""attention_backward (kind gradient_functions): the expected gradients are autograd's, the
hand-written reference matches them (and torch's own attention), the cases cover L == S and L != S,
causal and not, float32 and float64; where each named mistake shows; autograd however it is called
is the built-in; the two-mistake attempts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises
from attnprep.grader.forbidden import AutogradWatch
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.tensor_functions import edited_source
from test_grader import header


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "gradient_functions",
    "objects": ("attention_backward",),
    "signatures": {"attention_backward": "q, k, v, dout, is_causal=False"},
    "returns": "a tuple (dq, dk, dv), shaped like q, k and v",
}

EX = exercises.get("attention_backward")
PAIRS = Path(__file__).parent / "corpus" / "attention_backward" / "pairs"


def _sdpa_grads(case) -> dict[str, torch.Tensor]:
    """torch's own attention in float64, differentiated by autograd: a check independent of the
    reference file (torch's is_causal is top-left, as the contract's)."""
    i = case.inputs
    q, k, v = (i[n].detach().double().requires_grad_(True) for n in "qkv")
    with torch.enable_grad():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=i["_args"].get("is_causal", False))
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), i["dout"].double())
    return {"dq": dq, "dk": dk, "dv": dv}


@pytest.fixture(scope="module")
def kind():
    return kind_for(EX, 0)


def test_the_expected_gradients_are_torchs_on_every_graded_case(kind):
    for ci in range(len(kind.configs)):
        expected = kind.reference(ci)
        for case in kind.cases(ci):
            want, torch_grads = expected(case), _sdpa_grads(case)
            for name in ("dq", "dk", "dv"):
                assert want[name].dtype == torch.float64
                assert want[name].shape == case.inputs[{"dq": "q", "dk": "k", "dv": "v"}[name]].shape
                assert torch.allclose(want[name], torch_grads[name], rtol=1e-10, atol=1e-12), (ci, case.name, name)


def test_the_hand_written_reference_matches_autograd_within_each_dtypes_tolerance(kind):
    for ci in range(len(kind.configs)):
        expected, hand = kind.reference(ci), kind.trail_reference(ci)
        for case in kind.cases(ci):
            want, got = expected(case), hand(case)
            rtol, atol = case.tolerance
            for name in want:
                assert got[name].dtype == case.inputs["q"].dtype
                assert torch.allclose(got[name].double(), want[name], rtol=rtol, atol=atol), (ci, case.name, name)


def test_the_cases_hold_what_the_contract_promises(kind):
    sizes = [(c["L"], c["S"]) for c in kind.configs]
    assert sizes[0][0] == sizes[0][1] and any(L < S for L, S in sizes) and any(L > S for L, S in sizes)
    assert [L == S for L, S in sizes] == sorted((L == S for L, S in sizes), reverse=True)  # L == S first
    cases = kind.cases(0)
    assert {bool(c.inputs["_args"].get("is_causal")) for c in cases} == {False, True}
    by_dtype = {c.dtype: c.tolerance for c in cases}
    assert set(by_dtype) == {"float32", "float64"} and by_dtype["float64"][0] < 1e-8 < by_dtype["float32"][0]
    assert sum(c.observe for c in cases) == 1 and next(c for c in cases if c.observe).inputs["_args"]["is_causal"]
    assert "gradients" not in kind.probes  # the outputs are gradients already


def _differs(kind, ci, knob, case) -> bool | str:
    want = kind.reference(ci)(case)
    try:
        got = kind.variant(ci, frozenset(), knob, 0.0)(case)
    except RuntimeError:
        return "raises"
    rtol, atol = case.tolerance
    return any(not torch.allclose(got[n].double(), want[n], rtol=rtol, atol=atol) for n in want)


SHOWS = {
    "softmax_backward_no_rowsum": lambda c, L, S: True,
    "backward_scale_missing": lambda c, L, S: True,
    "backward_causal_mask_ignored": lambda c, L, S: bool(c.inputs["_args"].get("is_causal")),
    "causal_flag_inverted": lambda c, L, S: True,  # masked where not asked, unmasked where asked
    "backward_causal_mask_ignored:saved_lse": lambda c, L, S: bool(c.inputs["_args"].get("is_causal")),
    "backward_causal_mask_ignored:masked_delta": lambda c, L, S: bool(c.inputs["_args"].get("is_causal")),
    "dv_not_transposed": lambda c, L, S: True if L == S else "raises",
    "dk_not_transposed": lambda c, L, S: True if L == S else "raises",
}


@pytest.mark.parametrize("knob", sorted(SHOWS))
def test_a_mistake_shows_exactly_in_its_cases(kind, knob):
    assert sorted(kind.knobs()) == sorted(SHOWS)
    for ci, config in enumerate(kind.configs):
        for case in kind.cases(ci):
            assert _differs(kind, ci, knob, case) == SHOWS[knob](case, config["L"], config["S"]), (ci, case.name)


def test_the_scale_mistake_drops_the_scale_from_dq_and_dk_only(kind):
    case = kind.cases(0)[0]
    want = kind.reference(0)(case)
    got = kind.variant(0, frozenset(), "backward_scale_missing", 0.0)(case)
    root_d = kind.configs[0]["D"] ** 0.5
    assert torch.allclose(got["dq"].double(), want["dq"] * root_d, rtol=1e-4, atol=1e-5)
    assert torch.allclose(got["dk"].double(), want["dk"] * root_d, rtol=1e-4, atol=1e-5)
    assert torch.allclose(got["dv"].double(), want["dv"], rtol=1e-4, atol=1e-5)


def test_every_edit_changes_the_reference():
    source = EX.solution_path.read_text(encoding="utf-8")
    for knob in EX.grading["knobs"]:
        assert edited_source(source, EX.grading["edits"][knob]) != source, knob


def test_the_autograd_watch_sees_autograd_and_nothing_else():
    q = torch.randn(3, 4)
    seen: set[str] = set()
    with AutogradWatch(seen), torch.no_grad():
        p = torch.softmax(q @ q.T, -1)
        (p * (p - p.sum(-1, keepdim=True))).detach().requires_grad_(False)
    assert seen == set()
    with AutogradWatch(seen), torch.no_grad():
        with torch.enable_grad():
            x = q.clone().requires_grad_()
            torch.autograd.grad((x * x).sum(), x)
    assert seen == {"autograd (Tensor.requires_grad_)", "autograd (a graph built)", "autograd (torch.autograd.grad)"}


HAND = """
    scale = q.size(-1) ** -0.5
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = s.softmax(-1)
"""


@pytest.mark.parametrize("body", [
    # torch.autograd.functional: autograd.grad underneath
    "    f = lambda q, k, v: attention(q, k, v, is_causal)\n"
    "    return torch.autograd.functional.vjp(f, (q, k, v), dout)[1]\n",
    # torch.func.grad of the summed product
    "    f = lambda q, k, v: (attention(q, k, v, is_causal) * dout).sum()\n"
    "    return torch.func.grad(f, argnums=(0, 1, 2))(q, k, v)\n",
    # leaves as parameters, backward through a hand-written softmax (no softmax backward kernel)
    "    q, k, v = (torch.nn.Parameter(t.clone()) for t in (q, k, v))\n"
    "    with torch.enable_grad():\n"
    "        s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5\n"
    "        if is_causal:\n"
    "            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=q.device).triu(1), float('-inf'))\n"
    "        e = torch.exp(s - s.amax(-1, keepdim=True))\n"
    "        torch.autograd.backward((e / e.sum(-1, keepdim=True)) @ v, dout)\n"
    "    return q.grad, k.grad, v.grad\n",
    # autograd through torch's softmax by hand: its backward kernel is the softmax backward
    HAND + "    return (torch.ops.aten._softmax_backward_data(dout @ v.transpose(-2, -1), p, -1, p.dtype) * scale) @ k, "
    "(torch.ops.aten._softmax_backward_data(dout @ v.transpose(-2, -1), p, -1, p.dtype) * scale).transpose(-2, -1) @ q, "
    "p.transpose(-2, -1) @ dout\n",
], ids=["autograd_functional_vjp", "func_grad", "parameters_backward", "softmax_backward_kernel"])
def test_autograd_is_a_built_in_however_called(body, tmp_path, graded):
    path = tmp_path / "attention_backward.py"
    path.write_text(
        "import torch\n\n\ndef attention(q, k, v, is_causal):\n" + HAND.replace("    p = s.softmax(-1)\n", "") +
        "    return s.softmax(-1) @ v\n\n\ndef attention_backward(q, k, v, dout, is_causal=False):\n" + body,
        encoding="utf-8")
    result = graded(path, "attention_backward")
    assert result.verdict.value == "used_builtin", result.checks
    assert [d.id for d in result.diagnoses] == ["used_builtin"]


def test_a_no_grad_decorator_and_detach_are_not_autograd(tmp_path, graded):
    path = tmp_path / "attention_backward.py"
    path.write_text("import torch\n\n\n@torch.no_grad()\ndef attention_backward(q, k, v, dout, is_causal=False):\n"
                    "    q, k, v, dout = (t.detach() for t in (q, k, v, dout))\n" + HAND +
                    "    dp = dout @ v.transpose(-2, -1)\n"
                    "    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale\n"
                    "    return ds @ k, ds.transpose(-2, -1) @ q, p.transpose(-2, -1) @ dout\n", encoding="utf-8")
    assert graded(path, "attention_backward").verdict.value == "passed"


@pytest.mark.parametrize("path", sorted(PAIRS.glob("*.py")), ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    expect, diagnosis = header(path)
    result = graded(path)
    assert result.verdict.value == expect
    assert [d.id for d in result.diagnoses] == [d.strip() for d in diagnosis.split("+")]


def test_the_kind_takes_what_it_differentiates_from_the_data():
    """gradient_functions is data-driven: the same forward differentiated with respect to v alone
    gives autograd's dv, and a dtype without a declared tolerance keeps the grader's default."""
    grading = {**EX.grading, "outputs": {"dv": "v"}, "autograd": {**EX.grading["autograd"], "wrt": ["v"]},
               "tolerances": {"float64": [1e-9, 1e-11]}}
    kind = kind_for(EX._replace(grading=grading), 0)
    case = kind.cases(0)[0]
    got = kind.reference(0)(case)
    assert list(got) == ["dv"] and torch.allclose(got["dv"], _sdpa_grads(case)["dv"], rtol=1e-10, atol=1e-12)
    assert case.tolerance is None and kind.cases(0)[-1].tolerance == (1e-9, 1e-11)


# How tests/test_mutation.py mutates the reference (keys and defaults there): its kind has no
# attention trait, but its reference is attention's forward and backward, so the attention families
# and sizes are expected of it, as of an attention kind (families None: EXPECTED_FAMILIES)
MUTATION = {"min": 40, "sample": 6, "families": None}
