"""cross_attention: the reference against torch's nn.MultiheadAttention (kdim / vdim), the contract
of SPEC §7 written out here, the cases the context_module kind grades, and the attempts that only
compute at equal lengths and widths (named from the config where they run, then an error)."""

from __future__ import annotations

import ast
import inspect
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from attnprep import exercises, texts
from attnprep.grader import grade
from attnprep.grader.kinds import kind_for
from attnprep.grader.result import Verdict
from attnprep.solutions.cross_attention import CrossAttention
from per_exercise import linear

EX = exercises.get("cross_attention")
CORPUS = Path(__file__).parent / "corpus" / "cross_attention"
F64 = torch.float64

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "context_module",
    "objects": ("CrossAttention",),
    "constructor": "d_model, num_heads, d_context=None, dropout=0.0",
    "forward": "x, context, context_mask=None",
    "returns": "(B, T, d_model)",
    "params": lambda a: {**linear("q_proj", a["d_model"], a["d_model"]),
                         **linear("k_proj", a.get("d_context") or a["d_model"], a["d_model"]),
                         **linear("v_proj", a.get("d_context") or a["d_model"], a["d_model"]),
                         **linear("o_proj", a["d_model"], a["d_model"])},
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors; and the grader forks: torch stays single-threaded (as warm_up leaves it)."""
    torch.set_num_threads(1)


def _torch_mha(ref: CrossAttention, d_model: int, num_heads: int, d_context: int) -> nn.MultiheadAttention:
    """torch's own attention with the reference's weights (separate q/k/v weights when kdim != d_model)."""
    mha = nn.MultiheadAttention(d_model, num_heads, kdim=d_context, vdim=d_context, batch_first=True, dtype=F64)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(torch.cat([ref.q_proj.weight, ref.k_proj.weight, ref.v_proj.weight]))
        else:
            mha.q_proj_weight.copy_(ref.q_proj.weight)
            mha.k_proj_weight.copy_(ref.k_proj.weight)
            mha.v_proj_weight.copy_(ref.v_proj.weight)
        mha.in_proj_bias.copy_(torch.cat([ref.q_proj.bias, ref.k_proj.bias, ref.v_proj.bias]))
        mha.out_proj.weight.copy_(ref.o_proj.weight)
        mha.out_proj.bias.copy_(ref.o_proj.bias)
    return mha.eval()


@pytest.mark.parametrize(("d_model", "num_heads", "d_context"), [(16, 4, None), (12, 3, 20), (24, 6, 10), (8, 1, 12), (6, 2, 6)])
@pytest.mark.parametrize(("B", "T", "S"), [(1, 1, 1), (2, 1, 9), (3, 5, 9), (2, 7, 3), (2, 4, 4)])
@pytest.mark.parametrize("padding", ["none", "right", "left"])
def test_reference_equals_torch_multihead_attention(d_model, num_heads, d_context, B, T, S, padding):
    g = torch.Generator().manual_seed(d_model * 100 + T * 10 + S)
    ref = CrossAttention(d_model, num_heads, d_context).to(F64).eval()
    for p in ref.parameters():
        nn.init.uniform_(p, -0.5, 0.5, generator=g)
    width = d_context or d_model
    x = torch.randn(B, T, d_model, dtype=F64, generator=g)
    context = torch.randn(B, S, width, dtype=F64, generator=g)
    mask = None
    if padding != "none":
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        positions = torch.arange(S)[None, :]
        mask = positions < lengths[:, None] if padding == "right" else positions >= (S - lengths)[:, None]
    want, _ = _torch_mha(ref, d_model, num_heads, width)(x, context, context, key_padding_mask=None if mask is None else ~mask)
    torch.testing.assert_close(ref(x, context, mask), want, rtol=1e-10, atol=1e-10)


def test_contract_is_spec_7():
    c = EX.contract
    assert (c.kind, c.objects, c.returns) == ("context_module", ("CrossAttention",), "(B, T, d_model)")
    init = ast.parse(f"def f({c.constructor}): pass").body[0].args
    assert [a.arg for a in init.args] == ["d_model", "num_heads", "d_context", "dropout"]
    assert [ast.literal_eval(d) for d in init.defaults] == [None, 0.0]
    forward = ast.parse(f"def f({c.forward}): pass").body[0].args
    assert [a.arg for a in forward.args] == ["x", "context", "context_mask"]
    assert [ast.literal_eval(d) for d in forward.defaults] == [None]
    assert (EX.difficulty, EX.minutes) == ("medium", 6)
    sig = inspect.signature(CrossAttention.__init__)
    assert list(sig.parameters)[1:] == ["d_model", "num_heads", "d_context", "dropout"]
    assert list(inspect.signature(CrossAttention.forward).parameters)[1:] == ["x", "context", "context_mask"]


@pytest.mark.parametrize("ci", range(len(EX.grading["configs"])))
def test_parameter_shapes_follow_the_contract_with_d_context_defaulting_to_d_model(ci):
    kind = kind_for(EX, 0)
    sizes = kind.sizes(ci)
    d, dc = sizes["d_model"], sizes["d_context"]
    expected = {"q_proj.weight": (d, d), "q_proj.bias": (d,), "k_proj.weight": (d, dc), "k_proj.bias": (d,),
                "v_proj.weight": (d, dc), "v_proj.bias": (d,), "o_proj.weight": (d, d), "o_proj.bias": (d,)}
    model = CrossAttention(*kind.args(ci))
    assert {n: tuple(p.shape) for n, p in model.named_parameters()} == expected
    if "d_context" not in EX.grading["configs"][ci]:
        assert dc == d


def test_graded_sizes_are_those_spec_7_asks_for():
    kind = kind_for(EX, 0)
    sizes = [kind.sizes(ci) for ci in range(len(kind.configs))]
    assert any(s["T"] != s["S"] for s in sizes)
    assert any(s["d_context"] != s["d_model"] for s in sizes)
    assert any(s["T"] == 1 for s in sizes)
    first = sizes[0]  # where keys taken from x still compute: before any config where they raise
    assert first["T"] == first["S"] and first["d_context"] == first["d_model"]
    assert "d_context" not in EX.grading["configs"][0], "one config leaves d_context to its default"
    assert any(s.get("dropout", 0) > 0 for s in sizes)
    for s in sizes[1:]:  # the three scales a slip may use all differ
        hd = s["d_model"] // s["num_heads"]
        if s["num_heads"] > 1:
            assert len({hd, s["d_model"], s["d_context"], hd * hd}) == 4, s


@pytest.mark.parametrize("ci", range(len(EX.grading["configs"])))
def test_cases_pad_the_context_on_both_sides_and_grade_every_query(ci):
    kind = kind_for(EX, 0)
    s = kind.sizes(ci)
    cases = {c.name: c for c in kind.cases(ci)}
    for case in cases.values():
        x, context, mask = case.inputs["x"], case.inputs["context"], case.inputs["context_mask"]
        B, T = x.shape[:2]
        S = context.shape[1]
        assert x.shape[2] == s["d_model"] and context.shape[2] == s["d_context"]
        assert case.seq == (T, S) and case.queries.all() and case.queries.shape == (B, T)
        assert case.mask("out", (B, T, s["d_model"])).all()
        if ci == 0:
            assert T == S, case.name  # every case square: slips that need it compute
        if mask is not None:
            assert mask.dtype == torch.bool and mask.shape == (B, S) and mask.any(-1).all()
    assert cases["padded"].inputs["context_mask"][:, 0].all()  # right padding: first token real
    left = cases["left-padded"].inputs["context_mask"]
    assert left[:, -1].all() and not left[:, 0].all()  # left padding: last token real
    assert min(case.seq[0] for case in cases.values()) == 1
    checks = {c.check for c in cases.values() if c.base}
    assert checks == {"padding", "batch", "eval"}
    for case in cases.values():
        if case.check == "padding":
            base = cases[case.base]
            mask = case.inputs["context_mask"][..., None]
            assert torch.equal(case.inputs["x"], base.inputs["x"])
            assert torch.equal(torch.where(mask, case.inputs["context"], 0), torch.where(mask, base.inputs["context"], 0))
            assert not torch.equal(case.inputs["context"], base.inputs["context"])
    if ci > 0:
        assert any(case.seq[0] != case.seq[1] for case in cases.values())


def test_keys_from_x_compute_only_in_the_square_config():
    kind = kind_for(EX, 0)
    for ci in range(len(kind.configs)):
        call = kind.variant(ci, frozenset(), "cross_kv_from_x", float("-inf"))
        for case in kind.cases(ci):
            out = call(case)["out"]
            square = ci == 0
            assert (out.shape == (case.queries.shape[0], case.seq[0], kind.sizes(ci)["d_model"])) is square


def test_an_attempt_that_raises_later_but_is_right_where_it_ran_is_not_named(tmp_path):
    """The diagnosis of an attempt that raised comes from the configs it completed, and only when
    their outputs differ from the reference: a right attempt that breaks at d_context != d_model
    (a hard-coded width) is an error without a mistake."""
    source = EX.solution_path.read_text(encoding="utf-8").replace(
        "self.k_proj = nn.Linear(d_context, d_model)", "self.k_proj = nn.Linear(d_model, d_model)")
    path = tmp_path / "cross_attention.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    assert result.verdict is Verdict.CONTRACT or (result.verdict is Verdict.ERROR and result.diagnoses == ())
    # and the same through a forward that breaks only when T != S
    source = EX.solution_path.read_text(encoding="utf-8").replace(
        "S = context.shape[1]", "S = context.shape[1]\n        assert S == T, 'only square'")
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    assert result.verdict is Verdict.ERROR and result.diagnoses == ()
    assert "only square" in texts.render(result.error.message)


def test_keys_from_x_is_an_error_with_its_name_and_the_users_line(tmp_path, graded):
    result = graded(CORPUS / "cross_kv_from_x.py")
    assert result.verdict is Verdict.ERROR and [d.id for d in result.diagnoses] == ["cross_kv_from_x"]
    assert "cross_kv_from_x.py" in result.error.traceback and "k_proj(x)" in result.error.traceback


def test_layers_named_otherwise_are_mapped_by_shape_in_every_config(tmp_path):
    source = EX.solution_path.read_text(encoding="utf-8")
    for old, new in (("q_proj", "to_q"), ("k_proj", "to_k"), ("v_proj", "to_v"), ("o_proj", "to_out")):
        source = source.replace(old, new)
    path = tmp_path / "cross_attention.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    assert result.passed, result.checks
    assert result.mapping == {"q_proj": "to_q", "k_proj": "to_k", "v_proj": "to_v", "o_proj": "to_out"}


def test_context_mask_inverted_is_a_mask_leak_with_the_context_heatmap(graded):
    result = graded(CORPUS / "padding_mask_inverted.py")
    assert result.verdict is Verdict.MASK_LEAK
    heatmap = result.heatmap
    assert heatmap is not None and heatmap.case in ("padded", "left-padded")
    allowed = torch.tensor(heatmap.allowed)
    assert (allowed == allowed[0]).all()  # no causal structure: the same columns for every query
    assert not allowed.all()


def test_blank_stub_and_reference(tmp_path):
    stub = tmp_path / "cross_attention.py"
    stub.write_text(exercises.render_stub(EX), encoding="utf-8")
    assert grade(stub).blank
    shutil.copy(EX.solution_path, stub)
    assert grade(stub).passed


def test_the_scale_factor_is_one_number_of_one_named_case(graded):
    """Issue 30 §3: with sqrt(d_model) the mistake panel said 0.5× (config 0) and the divergence
    "times 0.2887" (the traced config), neither saying which: now the two give the traced case's
    factor and name the case and its sizes."""
    from attnprep import wording

    result = graded(CORPUS / "scale_d_model.py")
    d = result.divergence
    assert d is not None and d.reason == "scaled" and d.case and "num_heads=" in d.config
    (ratio,) = [e for e in result.diagnoses[0].evidence if e.key == "evidence.score_ratio_on"]
    assert f"{ratio.params['ratio']:.4g}" == d.named and ratio.params["case"] == d.case
    config = dict(kv.split("=") for kv in d.config.split(", "))
    assert abs(float(d.named) - int(config["num_heads"]) ** -0.5) < 1e-3  # sqrt(head_dim) / sqrt(d_model)
    texts.set_language("en")
    try:
        assert f"traced on case '{d.case}'" in wording.divergence_text(d)
        assert f"{d.named}× the reference's before the softmax (case '{d.case}'" in texts.render(ratio)
    finally:
        texts.set_language(None)


def test_a_forward_without_the_context_mask_says_cross_attentions_own_contract(tmp_path):
    """forward(x, context) without the context mask: the contract check names cross-attention's
    own arguments (x, context, context_mask=None), not the attention modules' (x, attention_mask,
    is_causal) — the kind's forward_key is the text said."""
    source = EX.solution_path.read_text(encoding="utf-8").replace(
        "self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor | None = None",
        "self, x: torch.Tensor, context: torch.Tensor")
    assert source != EX.solution_path.read_text(encoding="utf-8")
    path = tmp_path / "cross_attention.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    assert result.verdict is Verdict.CONTRACT
    (check,) = result.checks
    assert check.message.key == "context_module.forward_signature" and check.message.params == {"names": "x, context"}
    for lang in ("en", "zh"):
        assert "(x, context, context_mask=None)" in texts.render(check.message, lang)
# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# cross-attention has no causal mask (no tril)
MUTATION = {"focus": ("qkv_swap", "layer_drop"), "extra": {"layer_drop"}, "not_offered": {"causal_tri"}}


def test_the_trace_child_reuses_the_mapping_the_grading_child_got(monkeypatch):
    """A module of bare matrices has hundreds of candidate mappings: the grading child computes
    each one's probe output and asks which is right; the divergence finder's child asks first
    whether the choice among the same candidates is known, and it is."""
    from attnprep.grader.kinds.attention_module import AttentionModule

    asked = []
    answer = AttentionModule.answer
    monkeypatch.setattr(AttentionModule, "answer",
                        lambda self, q: asked.append((q["question"], q["config"])) or answer(self, q))
    result = grade(CORPUS / "flinear_dropout_no_training.py", "cross_attention")
    assert result.divergence is not None and result.divergence.line == 34
    known = [a for a in asked if a[0] == "mapping_known"]
    full = [a for a in asked if a[0] == "mapping"]
    assert full
    assert sorted(c for _, c in full) == sorted({c for _, c in full})  # each config's mapping computed once
    # each config's first question, the trace child's, and those of a child that builds a config
    # again (the lines run per case, grader/groups.py): all answered at once, none computed again
    assert len(known) >= len(full) + 1
    assert known[len(full)] == ("mapping_known", 0) and full.count(("mapping", 0)) == 1  # the trace child's, next
