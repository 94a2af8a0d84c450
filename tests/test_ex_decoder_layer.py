"""The decoder_layer exercise and its kind (block_module): the reference against a decoder layer
written apart (per head, in loops), Hugging Face's and Meta's names mapped by name, the two norms
tried both ways by shape, the causal cases and the unpadded gradients case, the mistakes as edits
of the reference (each applies once and changes the output), and the two-mistake attempts of
tests/corpus/decoder_layer/pairs/.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader import weights as W
from attnprep.grader.cases import grads_case
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.base import ContractError
from attnprep.grader.result import Verdict
from attnprep.solutions.decoder_layer import DecoderLayer

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "block_module",
    "objects": ("DecoderLayer",),
    "constructor": "d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6",
    "params": lambda a: _params(a),
}


def _params(a: dict) -> dict[str, tuple[int, ...]]:
    d, h, g, f = a["d_model"], a["num_heads"], a["num_kv_heads"], a["d_ff"]
    hd = d // h
    return {"attn_norm.weight": (d,), **linear("q_proj", d, d, bias=False), **linear("k_proj", d, g * hd, bias=False),
            **linear("v_proj", d, g * hd, bias=False), **linear("o_proj", d, d, bias=False), "ffn_norm.weight": (d,),
            **linear("w1", d, f, bias=False), **linear("w2", f, d, bias=False), **linear("w3", d, f, bias=False)}

EX = exercises.get("decoder_layer")
CORPUS = Path(__file__).parent / "corpus" / "decoder_layer"
PAIRS = sorted((CORPUS / "pairs").glob("*.py"))


def _by_hand(m: DecoderLayer, x: torch.Tensor, mask: torch.Tensor | None, theta: float, eps: float) -> torch.Tensor:
    """A Llama layer computed token by token and head by head, from the parameters alone."""
    B, T, C = x.shape
    H, G = m.num_heads, m.num_kv_heads
    D = C // H

    def rms(v, w):
        return v / torch.sqrt((v * v).mean(-1, keepdim=True) + eps) * w

    def rot(v, t):  # v (D,) at position t: pairs (i, i + D/2) turned by t * theta^(-2i/D)
        out = torch.empty_like(v)
        for i in range(D // 2):
            a = t * theta ** (-2 * i / D)
            out[i] = v[i] * math.cos(a) - v[i + D // 2] * math.sin(a)
            out[i + D // 2] = v[i + D // 2] * math.cos(a) + v[i] * math.sin(a)
        return out

    y = rms(x, m.attn_norm.weight)
    q, k, v = y @ m.q_proj.weight.T, y @ m.k_proj.weight.T, y @ m.v_proj.weight.T
    heads = torch.zeros(B, T, C, dtype=x.dtype)
    for b in range(B):
        for h in range(H):
            g = h // (H // G)  # grouped: consecutive query heads share a KV head
            for i in range(T):
                qi = rot(q[b, i, h * D:(h + 1) * D], i)
                keys = [j for j in range(i + 1) if mask is None or mask[b, j]]
                if not keys:
                    continue
                s = torch.stack([qi @ rot(k[b, j, g * D:(g + 1) * D], j) / math.sqrt(D) for j in keys])
                p = torch.exp(s - s.max()) / torch.exp(s - s.max()).sum()
                heads[b, i, h * D:(h + 1) * D] = sum(p[n] * v[b, j, g * D:(g + 1) * D] for n, j in enumerate(keys))
    h_ = x + heads @ m.o_proj.weight.T
    z = rms(h_, m.ffn_norm.weight)
    g1, g3 = z @ m.w1.weight.T, z @ m.w3.weight.T
    return h_ + (g1 * torch.sigmoid(g1) * g3) @ m.w2.weight.T


@pytest.mark.parametrize("config", [dict(c) for c in EX.grading["configs"]])
def test_reference_is_a_llama_layer_written_apart(config):
    g = torch.Generator().manual_seed(1)
    m = DecoderLayer(*[config[k] for k in ("d_model", "num_heads", "num_kv_heads", "d_ff")],
                     config.get("rope_theta", 10000.0), config.get("eps", 1e-6)).double()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.3 + (1 if p.dim() == 1 else 0))
    x = torch.randn(2, 5, config["d_model"], generator=g, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [False, False, True, True, True]])
    want = _by_hand(m, x, mask, config.get("rope_theta", 10000.0), config.get("eps", 1e-6))
    got = m(x, mask)
    close = dict(rtol=1e-4, atol=1e-5)  # the reference normalises and rotates in float32, as Llama
    torch.testing.assert_close(got[0], want[0], **close)
    torch.testing.assert_close(got[1, 2:], want[1, 2:], **close)  # the padded query rows are not graded
    torch.testing.assert_close(m(x)[0], want[0], **close)


def test_hugging_face_names_map_by_name(graded):
    result = graded(CORPUS / "ok_hf_llama.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping == {
        "attn_norm": "input_layernorm", "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj",
        "v_proj": "self_attn.v_proj", "o_proj": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
        "w1": "mlp.gate_proj", "w2": "mlp.down_proj", "w3": "mlp.up_proj"}


def test_meta_names_map_by_name(graded):
    result = graded(CORPUS / "ok_meta_llama.py")
    assert result.verdict is Verdict.PASSED
    assert result.mapping["attn_norm"] == "attention_norm" and result.mapping["q_proj"] == "attention.wq"
    assert result.mapping["w1"] == "feed_forward.w1" and result.mapping["ffn_norm"] == "ffn_norm"


def test_two_unnamed_norms_are_tried_both_ways():
    roles = W.roles_for(EX, {"d_model": 48, "num_heads": 8, "num_kv_heads": 2, "d_ff": 64})
    layers = [W.Layer("n_a", (48,), None), W.Layer("n_b", (48,), None)] + [
        W.Layer(r.name, r.weight, None) for r in roles if r.kind == "linear"]
    options, why = W.candidates(roles, layers, (2, 8), leaf_names=True)
    assert why is None
    assert sorted((o.layers["attn_norm"], o.layers["ffn_norm"]) for o in options) == [("n_a", "n_b"), ("n_b", "n_a")]


def test_bare_gains_and_a_fused_qkv_are_graded(graded):
    assert graded(CORPUS / "ok_einsum_grouped_zh.py").verdict is Verdict.PASSED  # bare 1-d gains, own names
    result = graded(CORPUS / "ok_nanogpt_block.py")
    assert result.verdict is Verdict.PASSED
    assert any(n.kind == "stacked" and n.layer == "attn.c_attn" for n in result.mapping_notes)


def test_cases_are_causal_and_gradients_are_graded_unpadded():
    kind = kind_for(EX, seed=0)
    cases = kind.cases(0)
    assert all("is_causal" not in c.inputs for c in cases)
    assert {c.check for c in cases} >= {"causality", "padding", "batch", "eval"}
    assert any(c.inputs["attention_mask"] is not None and not c.inputs["attention_mask"][:, 0].all() for c in cases)  # left padding
    grads = grads_case(cases)
    assert grads.inputs["attention_mask"] is None and grads.queries.all()
    eval_case = next(c for c in cases if c.check == "eval")
    assert eval_case.base in {c.name for c in cases}


def test_a_forward_without_the_mask_is_a_contract_error():
    kind = kind_for(EX, seed=0)

    class OnlyX(torch.nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(ContractError) as raised:
        kind.check_forward(OnlyX)
    assert raised.value.key == "block_module.forward_signature"


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_every_knob_is_an_edit_that_applies_once_and_changes_the_output(knob):
    kind = kind_for(EX, seed=0)
    source = EX.solution_path.read_text(encoding="utf-8")
    assert source.count(EX.grading["edits"][knob][0]["old"]) == 1
    for ci in range(len(kind.configs)):
        changed = 0.0
        for case in kind.cases(ci)[:3]:  # unpadded, right- and left-padded
            with torch.no_grad():
                want = kind.reference(ci)(case)["out"]
                got = kind.variant(ci, frozenset(), knob, 0.0)(case)["out"]
            assert got.shape == want.shape
            rows = case.queries[..., None].expand_as(want)
            changed = max(changed, float((got - want)[rows].abs().nan_to_num(nan=1.0).max()))
        assert changed > 1e-3, (knob, ci)


def test_post_norm_is_the_norm_after_each_add():
    kind = kind_for(EX, seed=0)
    case = kind.cases(0)[0]
    m = DecoderLayer(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            getattr(m, role).weight.copy_(t["weight"])
        x = case.inputs["x"]
        h = m.attn_norm(x + m.attention(x, None))
        want = m.ffn_norm(h + m.feed_forward(h))
        torch.testing.assert_close(kind.variant(0, frozenset(), "decoder_post_norm", 0.0)(case)["out"], want)


def test_post_norm_of_one_sub_layer_leaves_the_other_pre_norm():
    """A block half-converted: decoder_post_norm:attn (resp. :ffn) normalises after the attention's
    (the feed-forward's) add only, the other sub-layer as Llama's."""
    kind = kind_for(EX, seed=0)
    case = kind.cases(0)[0]
    m = DecoderLayer(*kind.args(0))
    with torch.no_grad():
        for role, t in kind.role_weights(0).items():
            getattr(m, role).weight.copy_(t["weight"])
        x = case.inputs["x"]
        h = m.attn_norm(x + m.attention(x, None))
        torch.testing.assert_close(kind.variant(0, frozenset(), "decoder_post_norm:attn", 0.0)(case)["out"],
                                   h + m.feed_forward(m.ffn_norm(h)))
        h = x + m.attention(m.attn_norm(x), None)
        torch.testing.assert_close(kind.variant(0, frozenset(), "decoder_post_norm:ffn", 0.0)(case)["out"],
                                   m.ffn_norm(h + m.feed_forward(h)))


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expect = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# expect:"))
    names = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# diagnosis:")).split(" + ")
    result = graded(path)
    assert result.verdict.value == expect
    assert sorted(d.id for d in result.diagnoses) == sorted(names)
    assert result.divergence is not None


def test_chains_lead_to_and_from_the_layer():
    assert "decoder_layer" in exercises.get("swiglu").follow_ups
    assert "decoder_layer" in exercises.get("gqa").follow_ups
    assert EX.follow_ups == ("moe",)
