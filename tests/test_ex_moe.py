"""The moe exercise and its kind (routed_module): the reference against a dense formula written
apart, repeated contract roles (experts.*.w1 for every expert) mapped by name, by Hugging Face's
names and by shape, index to index, the routing kept unambiguous in every graded input, the
mistakes as edits of the reference, and the two-mistake attempts of tests/corpus/moe/pairs/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises
from attnprep.grader import weights as W
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.routed_module import mapping_per_pattern, once_per_pattern
from attnprep.grader.result import MappingNote, Verdict
from attnprep.solutions.moe import MoE

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "routed_module",
    "objects": ("MoE",),
    "constructor": "d_model, d_ff, num_experts, top_k",
    "params": lambda a: _params(a),
}


def _params(a: dict) -> dict[str, tuple[int, ...]]:
    experts = {}
    for e in range(a["num_experts"]):
        experts |= {**linear(f"experts.{e}.w1", a["d_model"], a["d_ff"], bias=False),
                    **linear(f"experts.{e}.w2", a["d_ff"], a["d_model"], bias=False),
                    **linear(f"experts.{e}.w3", a["d_model"], a["d_ff"], bias=False)}
    return {**linear("gate", a["d_model"], a["num_experts"], bias=False), **experts}

EX = exercises.get("moe")
CORPUS = Path(__file__).parent / "corpus" / "moe"
PAIRS = sorted((CORPUS / "pairs").glob("*.py"))
SIZES = {"d_model": 16, "d_ff": 24, "num_experts": 4, "top_k": 2}


def _dense(m: MoE, x: torch.Tensor, k: int) -> torch.Tensor:
    """Every expert on every token, the top-k logits' softmax as weights of the chosen, 0 elsewhere."""
    logits = x @ m.gate.weight.T  # (B, T, E)
    every = torch.stack([(F.silu(x @ e.w1.weight.T) * (x @ e.w3.weight.T)) @ e.w2.weight.T
                         for e in m.experts], dim=-2)  # (B, T, E, C)
    top = logits.topk(k, dim=-1)
    weights = torch.zeros_like(logits).scatter(-1, top.indices, torch.exp(top.values) / torch.exp(top.values).sum(-1, keepdim=True))
    return (weights[..., None] * every).sum(-2)


def test_reference_is_the_weighted_sum_of_each_tokens_top_k_experts():
    g = torch.Generator().manual_seed(0)
    m = MoE(8, 12, 5, 3).double()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    x = torch.randn(2, 6, 8, generator=g, dtype=torch.float64)
    out, logits = m(x)
    torch.testing.assert_close(out, _dense(m, x, 3))
    torch.testing.assert_close(logits, x @ m.gate.weight.T)


def test_repeated_roles_are_one_role_per_index():
    roles = W.roles_for(EX, SIZES)
    assert [r.name for r in roles][:4] == ["gate", "experts.0.w1", "experts.1.w1", "experts.2.w1"]
    assert len(roles) == 1 + 3 * 4
    w1 = next(r for r in roles if r.name == "experts.2.w1")
    assert w1.pattern == "experts.*.w1" and w1.weight == (24, 16) and "experts.2.gate_proj" in w1.aliases
    assert next(r for r in roles if r.name == "gate").pattern == ""


def _expert_layers(names: tuple[str, str, str], n: int = 4) -> list[W.Layer]:
    up, down, gate = names
    return [W.Layer(f"experts.{e}.{name}", shape, None) for e in range(n)
            for name, shape in ((up, (24, 16)), (down, (16, 24)), (gate, (24, 16)))]


def test_hugging_face_names_map_by_name_every_expert_to_its_own():
    layers = [W.Layer("gate", (4, 16), None)] + _expert_layers(("up_proj", "down_proj", "gate_proj"))
    options, why = W.candidates(W.roles_for(EX, SIZES), layers, leaf_names=True)
    assert why is None and len(options) == 1
    (m,) = options
    assert m.by_name
    assert {r: m.layers[r] for r in ("experts.0.w1", "experts.3.w1", "experts.2.w2", "experts.1.w3")} == {
        "experts.0.w1": "experts.0.gate_proj", "experts.3.w1": "experts.3.gate_proj",
        "experts.2.w2": "experts.2.down_proj", "experts.1.w3": "experts.1.up_proj"}
    assert sorted((n.kind, n.role, n.layer) for n in m.notes) == [
        ("alias", "experts.*.w1", "experts.*.gate_proj"), ("alias", "experts.*.w2", "experts.*.down_proj"),
        ("alias", "experts.*.w3", "experts.*.up_proj")]


def test_unknown_names_map_by_shape_as_whole_lists_index_to_index():
    layers = [W.Layer("router", (4, 16), None)] + _expert_layers(("fc1", "proj", "fc2"))
    options, _ = W.candidates(W.roles_for(EX, SIZES), layers, leaf_names=True)
    # two same-shaped lists (fc1, fc2) for two roles (w1, w3): two candidates, not (2·4)! of layers
    assert sorted((o.layers["experts.1.w1"], o.layers["experts.1.w3"]) for o in options) == [
        ("experts.1.fc1", "experts.1.fc2"), ("experts.1.fc2", "experts.1.fc1")]
    for o in options:
        assert o.layers["gate"] == "router" and not o.by_name
        assert all(o.layers[f"experts.{e}.w2"] == f"experts.{e}.proj" for e in range(4))
        assert all(o.layers[f"experts.{e}.w1"].startswith(f"experts.{e}.") for e in range(4))


def test_a_list_of_the_wrong_length_maps_nothing():
    layers = [W.Layer("gate", (4, 16), None)] + _expert_layers(("w3", "w2", "w1"), n=3)
    options, why = W.candidates(W.roles_for(EX, SIZES), layers, leaf_names=True)
    assert options == [] and why is not None and why.key == "contract.no_layer"


def test_notes_of_a_repeated_role_are_told_once():
    notes = [MappingNote("by_shape", f"experts.{e}.w1", f"experts.{e}.fc1") for e in range(4)]
    notes += [MappingNote("by_shape", "gate", "router"), MappingNote("stray", "", "scale")]
    assert once_per_pattern(notes) == [MappingNote("by_shape", "experts.*.w1", "experts.*.fc1"),
                                       MappingNote("by_shape", "gate", "router"), MappingNote("stray", "", "scale")]


def test_the_mapping_is_told_once_per_pattern_only_when_every_index_agrees():
    same = {"gate": "router", **{f"experts.{e}.w1": f"experts.{e}.fc1" for e in range(3)}}
    assert mapping_per_pattern(same) == {"gate": "router", "experts.*.w1": "experts.*.fc1"}
    crossed = {"experts.0.w1": "experts.1.fc1", "experts.1.w1": "experts.0.fc1"}
    assert mapping_per_pattern(crossed) == crossed


@pytest.mark.parametrize("ci", [0, 1])
def test_graded_inputs_route_without_near_ties(ci):
    kind = kind_for(EX, seed=0)
    router = kind.role_weights(ci)["gate"]["weight"]
    margin = EX.grading["margin"]
    for case in kind.cases(ci):
        x = case.inputs["x"].float()
        assert x.dim() == 3
        ranked = (x @ router.T).sort(-1, descending=True).values
        assert (ranked[..., :-1] - ranked[..., 1:]).min() >= margin, case.name
        pooled = (x @ router.T).mean(1).sort(-1, descending=True).values
        assert (pooled[..., :-1] - pooled[..., 1:]).min() >= margin / 10, case.name


def _reference_module(kind) -> MoE:
    m = MoE(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            m.get_submodule(role).weight.copy_(t["weight"])
    return m


def test_top1_is_the_best_expert_alone_with_weight_one_and_per_sequence_uses_the_mean_logits():
    kind = kind_for(EX, seed=0)
    case = kind.cases(0)[0]
    x = case.inputs["x"]
    m = _reference_module(kind)
    with torch.no_grad():
        top1 = kind.variant(0, frozenset(), "moe_top1", 0.0)(case)["out"]
        best = m.gate(x).argmax(-1)  # (B, T)
        every = torch.stack([e(x) for e in m.experts], dim=-2)  # (B, T, E, C)
        torch.testing.assert_close(top1, every.gather(-2, best[..., None, None].expand(-1, -1, 1, x.shape[-1]))[..., 0, :])
        per_seq = kind.variant(0, frozenset(), "moe_routing_per_sequence", 0.0)(case)["out"]
        pooled = m.gate(x).mean(1, keepdim=True).expand_as(m.gate(x))
        top = pooled.topk(2, dim=-1)
        w = torch.zeros_like(pooled).scatter(-1, top.indices, top.values.softmax(-1))
        torch.testing.assert_close(per_seq, (w[..., None] * every).sum(-2))
        one = next(c for c in kind.cases(0) if c.name == "x (1, 1, d)")  # one token: its own mean
        torch.testing.assert_close(kind.variant(0, frozenset(), "moe_routing_per_sequence", 0.0)(one)["out"],
                                   kind.reference(0)(one)["out"])


def test_hugging_face_mixtral_is_graded_by_name(graded):
    result = graded(CORPUS / "ok_hf_mixtral.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping == {"gate": "gate", "experts.*.w1": "experts.*.w1", "experts.*.w2": "experts.*.w2",
                              "experts.*.w3": "experts.*.w3"}  # told once per repeated role


def test_experts_with_hf_names_map_by_alias(graded):
    result = graded(CORPUS / "ok_dense_gather.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping["experts.*.w1"] == "experts.*.gate_proj"
    assert ("alias", "experts.*.w1", "experts.*.gate_proj") in {(n.kind, n.role, n.layer) for n in result.mapping_notes}


def test_experts_of_unknown_names_are_mapped_by_shape(graded):
    result = graded(CORPUS / "ok_per_token_loop.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping == {"gate": "router", "experts.*.w1": "experts.*.fc1", "experts.*.w2": "experts.*.proj",
                              "experts.*.w3": "experts.*.fc2"}
    assert ("by_shape", "experts.*.w1", "experts.*.fc1") in {(n.kind, n.role, n.layer) for n in result.mapping_notes}


def test_a_bias_in_an_expert_is_a_contract_failure_that_names_the_layer(tmp_path, graded):
    source = (CORPUS / "ok_mistral_moe_layer.py").read_text(encoding="utf-8")
    path = tmp_path / "bias.py"
    path.write_text(source.replace("self.w3 = nn.Linear(dim, hidden_dim, bias=False)", "self.w3 = nn.Linear(dim, hidden_dim)"),
                    encoding="utf-8")
    result = graded(path)
    assert result.verdict is Verdict.CONTRACT
    (check,) = [c for c in result.checks if c.id == "contract"]
    assert check.message.key == "contract.extra_bias" and check.message.params["role"] == "experts.0.w3"


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expect = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# expect:"))
    names = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# diagnosis:")).split(" + ")
    result = graded(path)
    assert result.verdict.value == expect
    assert sorted(d.id for d in result.diagnoses) == sorted(names)


@pytest.mark.parametrize(("name", "line"), [
    ("moe_routing_per_sequence.py", "logits = self.gate(x).mean(dim=1)                        # (B, E): one routing per sequence"),
    ("moe_weights_not_applied.py", "results[batch_idx] += expert(inputs[batch_idx])"),
    ("moe_top1.py", "w = F.softmax(logits.gather(-1, best), dim=-1)  # (N, 1), all ones"),
    ("pairs/per_sequence_weights_not_applied.py", "pooled = logits.mean(dim=1, keepdim=True).expand(B, T, -1)       # (B, T, E)"),
])
def test_divergence_points_at_the_wrong_line(name, line, graded):
    result = graded(CORPUS / name)
    assert result.divergence is not None and result.divergence.code == line


def test_moe_ends_its_chain_and_keeps_its_place():
    assert EX.follow_ups == ()
    assert EX.order == 19 and (EX.difficulty, EX.minutes) == ("hard", 12)


def test_fused_gate_up_experts_are_mapped_by_rows_expert_by_expert(graded):
    result = graded(CORPUS / "ok_fused_gate_up_experts.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping["experts.*.w1"] == result.mapping["experts.*.w3"] == "experts.*.gate_up_proj"
    assert any(n.kind == "stacked" and n.layer == "experts.*.gate_up_proj" for n in result.mapping_notes)


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# a router, a top-k and a loop of SwiGLU experts: its named mistakes (tests/corpus/moe) are the rest
MUTATION = {"min": 30, "sample": 4, "families": {"constant", "softmax_dim", "split_order", "layer_drop"}}
