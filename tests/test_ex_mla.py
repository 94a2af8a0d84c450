"""mla: where the divergence finder points in DeepSeek's own form (complex rotations, a refused layer),
what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py), and
its reference (naive and absorbed, the rope helpers) checked in float64 against DeepSeek's own form."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attnprep.solutions.mla as mla_module
from attnprep import exercises
from attnprep.grader import grade
from attnprep.solutions.mla import MultiHeadLatentAttention, RMSNorm, apply_rotary_emb, precompute_freqs_cis
from attnprep.solutions.mla_absorbed import AbsorbedMultiHeadLatentAttention
from per_exercise import (ATOL, MASK_IDS, MASKS, RTOL, SHAPES, assert_close_graded, exec_stub, inputs,  # noqa: F401
                          latent_params, one_thread, parameter_shapes, seed_parameters)  # (one_thread: a fixture)
from test_divergence import _with

pytestmark = pytest.mark.usefixtures("one_thread")  # the float64 cross-checks: many tiny cases

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_module",
    "objects": ("MultiHeadLatentAttention",),
    "constructor": "d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0",
    "params": lambda a: latent_params(a),
    "order": 5,  # its place among the mission's six (SPEC §2), which the listing opens with
}

CORPUS = Path(__file__).parent / "corpus"


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("layer_drop", "split_order"), "extra": {"layer_drop"}}


def test_a_wrong_rope_angle_in_mla_is_pointed_at_where_the_angles_are_made(tmp_path):
    """DeepSeek's rotations are complex tensors: their values are compared like any other, so a
    wrong frequency shows at the line that makes it, not two helper calls later."""
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = 1.0 / (theta **", "freqs = 2.0 / (theta **")
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line == line and "freqs = 2.0" in result.divergence.code, result.divergence


def test_a_wrong_angle_table_in_mla_is_pointed_at_even_without_a_wrong_number(tmp_path):
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = torch.outer(t, freqs)",
                       "freqs = torch.outer(t * 2, freqs)")  # (t + 1: RoPE is relative, passes)
    result = grade(path)
    assert result.divergence is not None and result.divergence.line == line, result.divergence


def test_a_layer_the_contract_refuses_is_pointed_at_where_it_is_made(tmp_path):
    text = (CORPUS / "mla/ok_deepseek_verbatim_rope.py").read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if "self.wo = " in line)
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", old, old.replace("bias=False", "bias=True"))
    result = grade(path)
    assert result.verdict.value == "contract"
    d = result.divergence
    assert d is not None and (d.line, d.reason, d.name) == (line, "contract", "self.wo"), d


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("qk_nope_head_dim", "nope + rope", "self.wo")
FIX_SAYS = {"missing_scale": "nope + rope"}


KIB = 1024

# (closed-form value, how it is written in the answers): tests/test_registry.py finds each in the notes' answers
QUOTED_NUMBERS = [
    (128 * 192 + 128 * 128, "40,960 elements"),  # DeepSeek-V3 naive K + V
    (512 + 64, "576 elements (1,152 bytes"),
    (576 * 61, "35,136 elements ≈ 68.6 KiB"),
    (576 * 61 * 2 / KIB, "68.6 KiB"),
    (2 * 128 * 128, "32,768 per layer, ~57x"),
    (2 * 128 * 128 / 576, "~57x more"),
    (576 / (2 * 128), "2.25 groups"),
    ((7168 * 1536 + 1536 * 24576) / 1e6, "48.8M"),
    (7168 * 24576 / 1e6, "176.2M"),
    (1 / 192**-0.5, "1/13.9"),
    (128**0.5 + 64**0.5, "1/19.3"),
    (128 * 64, "(8,192 in V3)"),
]


def test_grading_configs_tell_the_latent_sizes_apart():
    configs = exercises.get("mla").grading["configs"]
    for c in configs:
        assert c["qk_rope_head_dim"] % 2 == 0 and c["qk_rope_head_dim"] >= 4, c
    assert any(c["v_head_dim"] != c["qk_nope_head_dim"] for c in configs)
    assert any(c["kv_lora_rank"] != c["q_lora_rank"] for c in configs)


def test_mla_stub_ready_made_rope_helpers_rotate_adjacent_pairs():
    ns = exec_stub(exercises.get("mla"))
    B, T, H, r, theta = 2, 5, 3, 6, 500.0
    freqs_cis = ns["precompute_freqs_cis"](r, T, theta)
    assert tuple(freqs_cis.shape) == (T, r // 2) and freqs_cis.is_complex()
    x = torch.randn(B, T, H, r, generator=torch.Generator().manual_seed(0))
    y = ns["apply_rotary_emb"](x, freqs_cis)
    assert y.shape == x.shape and y.dtype == x.dtype
    expected = torch.empty_like(x)
    for t in range(T):
        for i in range(r // 2):
            angle = t * theta ** (-2 * i / r)
            x1, x2 = x[:, t, :, 2 * i], x[:, t, :, 2 * i + 1]
            expected[:, t, :, 2 * i] = x1 * math.cos(angle) - x2 * math.sin(angle)
            expected[:, t, :, 2 * i + 1] = x1 * math.sin(angle) + x2 * math.cos(angle)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(y[:, 0], x[:, 0])  # position 0 is not rotated
    # k_pe's shape in the hints: one head, broadcast later
    assert ns["apply_rotary_emb"](x[:, :, :1], freqs_cis).shape == (B, T, 1, r)


def test_mla_stub_rmsnorm_is_a_parameterised_rmsnorm():
    ns = exec_stub(exercises.get("mla"))
    norm = ns["RMSNorm"](6, eps=1e-6)
    assert [(n, tuple(p.shape)) for n, p in norm.named_parameters()] == [("weight", (6,))]
    with torch.no_grad():
        norm.weight.copy_(torch.arange(1.0, 7.0))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * torch.arange(1.0, 7.0)
    torch.testing.assert_close(norm(x), expected)


# --- the reference against a second, DeepSeek-style implementation (float64) ------------------------

MLA_CONFIGS = [
    dict(d_model=32, num_heads=4, q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6),
    # one head, odd nope size (odd storage offset of the rope slice), custom theta
    dict(d_model=16, num_heads=1, q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=3, qk_rope_head_dim=2,
         v_head_dim=5, rope_theta=500.0),
    dict(d_model=24, num_heads=3, q_lora_rank=10, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=6, v_head_dim=4),
]


def test_reference_parameters():
    assert parameter_shapes(MultiHeadLatentAttention(**MLA_CONFIGS[0])) == {
        "wq_a.weight": (12, 32), "q_norm.weight": (12,), "wq_b.weight": (4 * 12, 12),
        "wkv_a.weight": (16 + 4, 32), "kv_norm.weight": (16,), "wkv_b.weight": (4 * (8 + 6), 16),
        "wo.weight": (32, 4 * 6)}


def test_mla_norms_and_absorbed_contract():
    mla = MultiHeadLatentAttention(**MLA_CONFIGS[0])
    assert isinstance(mla.q_norm, RMSNorm) and isinstance(mla.kv_norm, RMSNorm)
    assert mla.q_norm.eps == mla.kv_norm.eps == 1e-6
    assert torch.equal(mla.kv_norm.weight, torch.ones(16))
    absorbed = AbsorbedMultiHeadLatentAttention(**MLA_CONFIGS[0])
    assert parameter_shapes(absorbed) == parameter_shapes(mla)
    absorbed.load_state_dict(mla.state_dict(), strict=True)
    assert absorbed.kv_cache_elements_per_token() == 16 + 4
    assert AbsorbedMultiHeadLatentAttention(**MLA_CONFIGS[2]).kv_cache_elements_per_token() == 6 + 6


def ds_precompute_freqs_cis(dim: int, seqlen: int, base: float) -> torch.Tensor:
    """DeepSeek-V3 inference/model.py (without YaRN), in float64."""
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    t = torch.arange(seqlen, dtype=torch.float64)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def ds_apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """DeepSeek-V3 inference/model.py, with float64 in place of float32."""
    dtype = x.dtype
    x = torch.view_as_complex(x.double().clone(memory_format=torch.contiguous_format).view(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


def ds_mla(m: MultiHeadLatentAttention, x, mask, is_causal):
    """The naive branch of DeepSeek's MLA.forward: einsum attention, F.rms_norm, additive mask."""
    bsz, seqlen, _ = x.shape
    H, nope, rope, dv = m.num_heads, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
    freqs_cis = ds_precompute_freqs_cis(rope, seqlen, m.rope_theta)
    q_lora = F.rms_norm(F.linear(x, m.wq_a.weight), (m.wq_a.out_features,), m.q_norm.weight, 1e-6)
    q = F.linear(q_lora, m.wq_b.weight).view(bsz, seqlen, H, nope + rope)
    q_nope, q_pe = torch.split(q, [nope, rope], dim=-1)
    q_pe = ds_apply_rotary_emb(q_pe, freqs_cis)
    kv = F.linear(x, m.wkv_a.weight)
    kv, k_pe = torch.split(kv, [m.kv_lora_rank, rope], dim=-1)
    k_pe = ds_apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
    q = torch.cat([q_nope, q_pe], dim=-1)
    kv = F.linear(F.rms_norm(kv, (m.kv_lora_rank,), m.kv_norm.weight, 1e-6), m.wkv_b.weight)
    kv = kv.view(bsz, seqlen, H, nope + dv)
    k_nope, v = torch.split(kv, [nope, dv], dim=-1)
    k = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], dim=-1)
    scores = torch.einsum("bshd,bthd->bsht", q, k) / math.sqrt(nope + rope)
    additive = torch.zeros(bsz, seqlen, seqlen, dtype=torch.float64)  # (b, s, t)
    if mask is not None:
        additive = additive.masked_fill(~mask[:, None, :], float("-inf"))
    if is_causal:
        additive = additive + torch.full((seqlen, seqlen), float("-inf"), dtype=torch.float64).triu(1)
    scores = scores + additive.unsqueeze(2)
    scores = scores.softmax(dim=-1)
    out = torch.einsum("bsht,bthd->bshd", scores, v)
    return F.linear(out.flatten(2), m.wo.weight)


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("config", MLA_CONFIGS, ids=["h4", "h1-odd-nope", "h3-rope6"])
def test_mla_matches_deepseek_form(config, B, T, padding, is_causal):
    module = seed_parameters(MultiHeadLatentAttention(**config))
    x, mask = inputs(B, T, config["d_model"], padding)
    out = module(x, attention_mask=mask, is_causal=is_causal)
    assert out.shape == (B, T, config["d_model"]) and out.dtype == torch.float64
    assert_close_graded(out, ds_mla(module, x, mask, is_causal), mask)


@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("config", MLA_CONFIGS, ids=["h4", "h1-odd-nope", "h3-rope6"])
def test_mla_absorbed_equals_naive(config, B, T):
    """The absorbed form (the mla_decode reference behind compare's row) on a causal prefill; the
    decode steps are held against the naive form in the decoding exercise's own test module."""
    naive = seed_parameters(MultiHeadLatentAttention(**config), seed=5)
    absorbed = AbsorbedMultiHeadLatentAttention(**config).to(torch.float64).eval()
    absorbed.load_state_dict(naive.state_dict())
    x, _ = inputs(B, T, config["d_model"], False)
    calls = []
    absorbed.wkv_b.register_forward_hook(lambda *args: calls.append(1))
    out = absorbed(x, is_causal=True)
    assert calls == [], "the absorbed form must never expand the latent through wkv_b"
    torch.testing.assert_close(out, naive(x, is_causal=True), atol=ATOL, rtol=RTOL)
    with pytest.raises(ValueError):
        absorbed(x, attention_mask=torch.ones(B, T, dtype=torch.bool), is_causal=True)


@pytest.mark.parametrize("dim, T, theta", [(2, 1, 10000.0), (4, 7, 10000.0), (8, 16, 500.0), (64, 300, 10000.0)])
def test_rope_helpers_match_complex_form_and_scalar_rotation(dim, T, theta):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, T, 3, dim, generator=g, dtype=torch.float64)
    freqs_cis = precompute_freqs_cis(dim, T, theta)
    assert freqs_cis.shape == (T, dim // 2) and freqs_cis.is_complex()
    torch.testing.assert_close(freqs_cis, ds_precompute_freqs_cis(dim, T, theta), atol=1e-12, rtol=0)
    out = apply_rotary_emb(x, freqs_cis)
    assert out.shape == x.shape and out.dtype == torch.float64
    torch.testing.assert_close(out, ds_apply_rotary_emb(x, ds_precompute_freqs_cis(dim, T, theta)), atol=ATOL, rtol=0)
    # scalar arithmetic: pair (x[2i], x[2i+1]) at position t rotated by t * theta^(-2i/dim)
    for t in {0, T // 2, T - 1}:
        for i in range(dim // 2):
            angle = t * theta ** (-2 * i / dim)
            x1, x2 = x[:, t, :, 2 * i], x[:, t, :, 2 * i + 1]
            expected = torch.stack([x1 * math.cos(angle) - x2 * math.sin(angle), x1 * math.sin(angle) + x2 * math.cos(angle)], -1)
            torch.testing.assert_close(out[:, t, :, 2 * i : 2 * i + 2], expected, atol=1e-9, rtol=0)


def test_rope_is_relative():
    """<rope(a)@m, rope(b)@n> depends on m - n only: shifting both positions changes nothing."""
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(2, 8, generator=g, dtype=torch.float64)
    freqs_cis = precompute_freqs_cis(8, 12)
    x = torch.stack([a, b]).expand(12, 2, 8).permute(1, 0, 2)[:, :, None, :]  # (2, 12, 1, 8): a and b at all positions
    r = apply_rotary_emb(x, freqs_cis)[:, :, 0]  # (2, 12, 8)
    dots = [(r[0, m] @ r[1, n]).item() for m, n in [(5, 2), (7, 4), (11, 8)]]
    assert abs(dots[0] - dots[1]) < 1e-10 and abs(dots[0] - dots[2]) < 1e-10
    assert abs((r[0, 5] @ r[1, 2]).item() - (a @ b).item()) > 1e-6  # the rotation did something


def test_rope_region_is_self_contained():
    """The mla stub includes the `rope-helpers` region verbatim: it must run with only torch and math."""
    source = Path(mla_module.__file__).read_text(encoding="utf-8")
    lines = source.splitlines()
    region = "\n".join(lines[lines.index("# region rope-helpers") + 1 : lines.index("# endregion rope-helpers")])
    namespace = {"torch": torch, "math": math}
    exec(compile(region, "rope-helpers", "exec"), namespace)  # noqa: S102 - our own source
    defined = sorted(k for k in namespace if k not in ("torch", "math", "__builtins__"))
    assert defined == ["apply_rotary_emb", "precompute_freqs_cis"]
    assert not re.search(r"^\s*(import|from)\s", region, re.M)
    for name in defined:
        assert len(namespace[name].__doc__ or "") > 80
    x = torch.randn(1, 5, 2, 6, dtype=torch.float64)
    torch.testing.assert_close(
        namespace["apply_rotary_emb"](x, namespace["precompute_freqs_cis"](6, 5, 300.0)),
        apply_rotary_emb(x, precompute_freqs_cis(6, 5, 300.0)),
        atol=0, rtol=0,
    )
