"""The swiglu exercise and its kind (plain_module): the reference against a formula written apart,
the mapping of Hugging Face's names (contract aliases) and of same-shaped layers by shape, the
mistakes as edits of the reference (each one applies and changes the output, two compose), the
two-mistake attempts of tests/corpus/swiglu/pairs/, the bfloat16 case and the divergence lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises, interview
from attnprep.grader import weights as W
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds import plain_module as P
from attnprep.grader.result import Verdict
from attnprep.solutions.swiglu import SwiGLU

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "plain_module",
    "objects": ("SwiGLU",),
    "constructor": "d_model, d_ff",
    "params": lambda a: {**linear("w1", a["d_model"], a["d_ff"], bias=False), **linear("w2", a["d_ff"], a["d_model"], bias=False),
                         **linear("w3", a["d_model"], a["d_ff"], bias=False)},
}

EX = exercises.get("swiglu")
CORPUS = Path(__file__).parent / "corpus" / "swiglu"
PAIRS = sorted((CORPUS / "pairs").glob("*.py"))


def test_reference_is_the_formula_on_inputs_of_any_rank():
    g = torch.Generator().manual_seed(0)
    m = SwiGLU(6, 11).double()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    w1, w2, w3 = m.w1.weight, m.w2.weight, m.w3.weight
    for shape in [(6,), (5, 6), (2, 7, 6), (2, 3, 4, 6)]:
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        gate = x @ w1.T
        want = ((gate / (1 + torch.exp(-gate))) * (x @ w3.T)) @ w2.T  # silu(g) = g * sigmoid(g)
        torch.testing.assert_close(m(x), want)


def test_contract_aliases_are_data_and_map_by_name():
    assert {p.name: p.aliases[0] for p in EX.contract.params} == {"w1": "gate_proj", "w2": "down_proj", "w3": "up_proj"}
    roles = W.roles_for(EX, {"d_model": 16, "d_ff": 40})
    layers = [W.Layer("up_proj", (40, 16), None), W.Layer("gate_proj", (40, 16), None), W.Layer("down_proj", (16, 40), None)]
    options, why = W.candidates(roles, layers)
    assert why is None and len(options) == 1  # no probe needed: the aliases fix every role
    (m,) = options
    assert m.by_name and m.layers == {"w1": "gate_proj", "w2": "down_proj", "w3": "up_proj"}
    assert sorted((n.kind, n.role, n.layer) for n in m.notes) == [
        ("alias", "w1", "gate_proj"), ("alias", "w2", "down_proj"), ("alias", "w3", "up_proj")]


def test_same_shaped_layers_without_names_are_tried_both_ways():
    roles = W.roles_for(EX, {"d_model": 16, "d_ff": 40})
    layers = [W.Layer("fc1", (40, 16), None), W.Layer("fc2", (40, 16), None), W.Layer("proj", (16, 40), None)]
    options, _ = W.candidates(roles, layers)
    assert sorted((o.layers["w1"], o.layers["w3"]) for o in options) == [("fc1", "fc2"), ("fc2", "fc1")]
    assert all(not o.by_name and o.layers["w2"] == "proj" for o in options)


def test_an_alias_of_one_role_and_a_name_of_another_mix():
    roles = W.roles_for(EX, {"d_model": 16, "d_ff": 40})
    layers = [W.Layer("gate_proj", (40, 16), None), W.Layer("w3", (40, 16), None), W.Layer("w_out", (16, 40), None)]
    options, _ = W.candidates(roles, layers)
    assert options[0].layers == {"w1": "gate_proj", "w2": "w_out", "w3": "w3"}
    assert len(options) == 1  # gate_proj and w3 are fixed by name: only the down projection by shape


def test_hugging_face_names_are_graded_by_name(graded):
    result = graded(CORPUS / "ok_hf_llama_mlp.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping == {"w1": "gate_proj", "w2": "down_proj", "w3": "up_proj"}
    assert {(n.kind, n.role) for n in result.mapping_notes} >= {("alias", "w1"), ("alias", "w3"), ("alias", "w2")}


def test_a_fused_gate_up_projection_is_mapped_by_rows(graded):
    result = graded(CORPUS / "ok_fused_gate_up.py")
    assert result.verdict is Verdict.PASSED
    assert any(n.kind == "stacked" and n.layer == "gate_up_proj" for n in result.mapping_notes)


def test_a_bias_is_a_contract_failure_that_names_the_layer(graded):
    result = graded(CORPUS / "bias_added.py")
    assert result.verdict is Verdict.CONTRACT
    (check,) = [c for c in result.checks if c.id == "contract"]
    assert check.message.key == "contract.extra_bias" and check.message.params["role"] == "w1"


def test_the_two_gelus_are_told_apart_and_both_named_gelu():
    kind = kind_for(EX, seed=0)
    case = kind.cases(0)[3]  # large activations: exact and tanh GELU differ most
    with torch.no_grad():
        exact = kind.variant(0, frozenset(), "swiglu_gelu", 0.0)(case)["out"]
        tanh = kind.variant(0, frozenset(), "swiglu_gelu:tanh", 0.0)(case)["out"]
    assert not torch.allclose(exact, tanh, rtol=1e-4, atol=1e-5)
    x = case.inputs["x"]
    sw = SwiGLU(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            getattr(sw, role).weight.copy_(t["weight"])
        torch.testing.assert_close(tanh, sw.w2(F.gelu(sw.w1(x), approximate="tanh") * sw.w3(x)))


def test_two_edits_compose_and_clashing_edits_name_nothing():
    kind = kind_for(EX, seed=0)
    case = kind.cases(0)[0]
    x = case.inputs["x"]
    sw = SwiGLU(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            getattr(sw, role).weight.copy_(t["weight"])
        got = kind.variant(0, frozenset(), ("swiglu_sigmoid", "swiglu_gate_up_swapped"), 0.0)(case)["out"]
        torch.testing.assert_close(got, sw.w2(torch.sigmoid(sw.w3(x)) * sw.w1(x)))
        clash = kind.variant(0, frozenset(), ("swiglu_gelu", "swiglu_relu"), 0.0)
    with pytest.raises(P.EditError):
        clash(case)


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expect = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# expect:"))
    names = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# diagnosis:")).split(" + ")
    result = graded(path)
    assert result.verdict.value == expect
    assert sorted(d.id for d in result.diagnoses) == sorted(names)
    assert result.divergence is not None


def test_the_bfloat16_case_wants_bfloat16_back():
    kind = kind_for(EX, seed=0)
    (low,) = [c for c in kind.cases(0) if c.dtype != "float32"]
    assert low.dtype == "bfloat16" and low.inputs["x"].dtype == torch.bfloat16
    assert kind.expected_shapes(0, low) == {"out": (2, 7, 16)}
    # the exact reference of the rounded weights; an attempt computing in bfloat16 is within tolerance
    sw = SwiGLU(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            getattr(sw, role).weight.copy_(t["weight"])
        attempt = sw.to(torch.bfloat16)(low.inputs["x"])
        want = kind.reference(0)(low)["out"]
    assert want.dtype == torch.float64
    rtol, atol = low.tolerance
    assert torch.allclose(attempt.double(), want, rtol=rtol, atol=atol)


def test_every_rank_and_the_probes_are_graded():
    kind = kind_for(EX, seed=0)
    cases = kind.cases(0)
    assert {c.inputs["x"].dim() for c in cases} == {2, 3, 4}
    assert {c.check for c in cases if c.base} == {"batch", "eval"}
    assert kind.probes == {"batch", "eval", "gradients", "device"}


@pytest.mark.parametrize(("name", "line"), [
    ("swiglu_gelu.py", "gate = F.gelu(self.w1(x))"),
    ("swiglu_relu.py", "h = torch.relu(g) * u"),
    ("swiglu_no_activation.py", "h = self.w1(x) * self.w3(x)"),
    ("swiglu_gate_missing.py", "return self.w2(F.silu(self.w1(x)))"),
    ("swiglu_sigmoid.py", "swish = torch.sigmoid(gate)  # Swish(x) = x * sigmoid(x) ... forgot the x"),
])
def test_divergence_points_at_the_wrong_line(name, line, graded):
    result = graded(CORPUS / name)
    assert result.divergence is not None and result.divergence.code == line


def test_chain_skips_decoder_layer_until_the_bank_has_it():
    assert EX.follow_ups == ("decoder_layer",)
    bank = exercises.registry()
    expected = bank.get("decoder_layer")
    assert interview.follow_up_of(EX, bank) is expected


def test_nested_layers_map_by_their_last_name_only_when_the_kind_asks():
    roles = W.roles_for(EX, {"d_model": 16, "d_ff": 40})
    layers = [W.Layer("ffn.w1", (40, 16), None), W.Layer("ffn.w3", (40, 16), None), W.Layer("ffn.w2", (16, 40), None)]
    (named,), _ = W.candidates(roles, layers, leaf_names=True)
    assert named.by_name and named.layers == {"w1": "ffn.w1", "w2": "ffn.w2", "w3": "ffn.w3"}
    by_shape, _ = W.candidates(roles, layers)  # the attention kinds: by shape, both assignments tried
    assert len(by_shape) == 2 and not any(m.by_name for m in by_shape)
    twice = [W.Layer("a.w1", (40, 16), None), W.Layer("b.w1", (40, 16), None), W.Layer("w2", (16, 40), None)]
    assert len(W.candidates(roles, twice, leaf_names=True)[0]) == 2  # two layers named w1: by shape


MLP_SOLUTION = '''"""A GPT-2 MLP: c_proj(gelu(c_fc(x)))."""

import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.c_fc = nn.Linear(d_model, d_ff)
        self.c_proj = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = F.gelu(self.c_fc(x))  # (..., d_ff)
        return self.c_proj(h)  # (..., d_model)
'''

MLP_TOML = '''title = "zz GPT-2 MLP"
difficulty = "easy"
minutes = 3
order = 999
summary = "A test exercise."
hints = ["one", "two", "three"]
mistakes = ["zz_mlp_relu"]

[contract]
kind = "plain_module"
objects = ["MLP"]
constructor = "d_model: int, d_ff: int"
forward = "x: torch.Tensor"
returns = "(..., d_model)"
details = "c_proj(gelu(c_fc(x)))"
params = [
    { name = "c_fc", in = "d_model", out = "d_ff", aliases = ["fc1"] },
    { name = "c_proj", in = "d_ff", out = "d_model", aliases = ["fc2"] },
]

[grading]
configs = [{ d_model = 8, d_ff = 12 }]
knobs = ["zz_mlp_relu"]

[grading.edits]
zz_mlp_relu = [{ old = "F.gelu(", new = "F.relu(" }]
'''


def test_another_module_of_this_kind_is_data_and_a_solution(tmp_path, monkeypatch):
    """The kind is not SwiGLU's: a GPT-2 MLP with biases, other names and its own mistake, added as a
    folder and a solution only, is graded, mapped by its aliases and its mistake named. The folder
    goes in a copy of exercises/ (as tests/test_grader.py's copy of gqa): one added to the checkout is
    listed meanwhile by the tests of other workers (test_cli_catalog's completion of ids failed so)."""
    import shutil

    from attnprep.grader import grade

    new_id = "zz_plain_mlp"
    bank = tmp_path / "exercises"
    shutil.copytree(exercises.HERE, bank, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(exercises, "HERE", bank)
    folder = bank / new_id
    solution = exercises.SOLUTIONS_DIR / f"{new_id}.py"
    try:
        folder.mkdir()
        (folder / "exercise.toml").write_text(MLP_TOML, encoding="utf-8")
        (folder / "mistakes.toml").write_text('[[mistake]]\nid = "zz_mlp_relu"\ntitle = "ReLU"\nwhy = "w"\nfix = "f"\n',
                                              encoding="utf-8")
        solution.write_text(MLP_SOLUTION, encoding="utf-8")
        exercises.registry.cache_clear()
        ex = exercises.get(new_id)
        ok = tmp_path / "ok.py"
        ok.write_text(MLP_SOLUTION.replace("c_fc", "fc1").replace("c_proj", "fc2"), encoding="utf-8")
        passed = grade(ok, ex)
        assert passed.verdict is Verdict.PASSED, (passed.checks, passed.error)
        assert passed.mapping == {"c_fc": "fc1", "c_proj": "fc2"}
        relu = tmp_path / "relu.py"
        relu.write_text(MLP_SOLUTION.replace("F.gelu(", "F.relu("), encoding="utf-8")
        failed = grade(relu, ex)
        assert failed.verdict is Verdict.WRONG_OUTPUT and [d.id for d in failed.diagnoses] == ["zz_mlp_relu"]
        stub = tmp_path / "stub.py"
        stub.write_text(exercises.render_stub(ex), encoding="utf-8")
        assert grade(stub, ex).verdict is Verdict.ERROR
    finally:
        solution.unlink(missing_ok=True)
        monkeypatch.undo()
        exercises.registry.cache_clear()


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# three bias-free layers and one product: its named mistakes (tests/corpus/swiglu) are the rest
MUTATION = {"min": 6, "sample": 1, "families": {"constant", "layer_drop"}}
