"""Independent cross-checks of the reference solutions (solutions/*.py).

The references are what every attempt is graded against, so they are checked here against code that
shares nothing with them: torch's F.scaled_dot_product_attention for MHA / MQA / GQA / causal, and a
second MLA written in DeepSeek's official einsum + complex-number style. Everything runs in float64
with tight tolerances. Also: parameter contracts (the exercise contracts), the `meta` device (no tensor created
without device=), eval() switching dropout off, gradients reaching every parameter.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attnprep.solutions.mla as mla_module
from attnprep.solutions.causal import causal_attention, causal_mask
from attnprep.solutions.gqa import GroupedQueryAttention
from attnprep.solutions.mha import MultiHeadAttention
from attnprep.solutions.mha_fused import FusedMultiHeadAttention
from attnprep.solutions.mla import MultiHeadLatentAttention, RMSNorm, apply_rotary_emb, precompute_freqs_cis
from attnprep.solutions.mla_absorbed import AbsorbedMultiHeadLatentAttention
from attnprep.solutions.mqa import MultiQueryAttention

ATOL = 1e-10
RTOL = 1e-10
F64 = torch.float64

SHAPES = [(b, t) for b in (1, 2, 3) for t in (1, 5, 8)]
MASKS = [(False, False), (True, False), (False, True), (True, True)]  # (padding, is_causal)
MASK_IDS = ["plain", "padding", "is_causal", "padding+is_causal"]

MLA_CONFIGS = [
    dict(d_model=32, num_heads=4, q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6),
    # one head, odd nope size (odd storage offset of the rope slice), custom theta
    dict(d_model=16, num_heads=1, q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=3, qk_rope_head_dim=2,
         v_head_dim=5, rope_theta=500.0),
    dict(d_model=24, num_heads=3, q_lora_rank=10, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=6, v_head_dim=4),
]


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread is faster and avoids thread spinning on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)



def seed_parameters(module: nn.Module, seed: int = 0) -> nn.Module:
    """float64, every parameter redrawn from a seeded generator (non-zero biases, non-unit norms)."""
    module.to(F64)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=F64) / math.sqrt(p.shape[-1]) + (0.3 if p.ndim == 1 else 0.0))
    return module.eval()


def inputs(B: int, T: int, C: int, padding: bool, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, C, generator=g, dtype=F64)
    mask = right_padding(B, T) if padding else None
    return x, mask


def right_padding(B: int, T: int) -> torch.Tensor:
    """Bool (B, T), True = real token; right padding, lengths T-1, T-4, ... (at least 1 real token)."""
    lengths = torch.tensor([max(1, T - 1 - 3 * b) for b in range(B)])
    return torch.arange(T)[None, :] < lengths[:, None]


def graded(out: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Only the non-padded query positions are graded (the shared exercise conventions)."""
    return out if mask is None else out[mask]


def assert_close(actual: torch.Tensor, expected: torch.Tensor, mask: torch.Tensor | None = None) -> None:
    torch.testing.assert_close(graded(actual, mask), graded(expected, mask), atol=ATOL, rtol=RTOL)


def sdpa(q, k, v, mask, is_causal, enable_gqa=False):
    """torch's own attention on (B, H, T, D) q and (B, KV, T, D) k, v with the SPEC's masks."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=enable_gqa)
    T = q.shape[-2]
    allowed = mask[:, None, None, :]  # (B, 1, 1, T)
    if is_causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()  # (B, 1, T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=enable_gqa)


def qkv_weights(module: nn.Module):
    """(wq, bq, wk, bk, wv, bv) of any of the four projection-style modules."""
    if isinstance(module, FusedMultiHeadAttention):
        wq, wk, wv = module.qkv_proj.weight.chunk(3, dim=0)  # out features [q; k; v]
        bq, bk, bv = module.qkv_proj.bias.chunk(3, dim=0)
        return wq, bq, wk, bk, wv, bv
    return (module.q_proj.weight, module.q_proj.bias, module.k_proj.weight, module.k_proj.bias,
            module.v_proj.weight, module.v_proj.bias)


def reference_attention(module, x, mask, is_causal, num_heads, num_kv_heads):
    B, T, C = x.shape
    D = C // num_heads
    wq, bq, wk, bk, wv, bv = qkv_weights(module)
    q = F.linear(x, wq, bq).reshape(B, T, num_heads, D).permute(0, 2, 1, 3)
    k = F.linear(x, wk, bk).reshape(B, T, num_kv_heads, D).permute(0, 2, 1, 3)
    v = F.linear(x, wv, bv).reshape(B, T, num_kv_heads, D).permute(0, 2, 1, 3)
    out = sdpa(q, k, v, mask, is_causal, enable_gqa=num_kv_heads != num_heads)
    out = out.permute(0, 2, 1, 3).reshape(B, T, C)
    return F.linear(out, module.o_proj.weight, module.o_proj.bias)


# (id, factory, num_heads, num_kv_heads)
PROJECTION_CASES = [
    ("mha-16x4", lambda: MultiHeadAttention(16, 4), 4, 4),
    ("mha-12x3", lambda: MultiHeadAttention(12, 3), 3, 3),
    ("mha-8x1", lambda: MultiHeadAttention(8, 1), 1, 1),
    ("fused-16x4", lambda: FusedMultiHeadAttention(16, 4), 4, 4),
    ("fused-8x1", lambda: FusedMultiHeadAttention(8, 1), 1, 1),
    ("mqa-16x4", lambda: MultiQueryAttention(16, 4), 4, 1),
    ("mqa-8x1", lambda: MultiQueryAttention(8, 1), 1, 1),
    ("gqa-16x4/2", lambda: GroupedQueryAttention(16, 4, 2), 4, 2),  # groups of 2
    ("gqa-24x6/2", lambda: GroupedQueryAttention(24, 6, 2), 6, 2),  # groups of 3
    ("gqa-24x6/3", lambda: GroupedQueryAttention(24, 6, 3), 6, 3),  # groups of 2
    ("gqa-16x4/1", lambda: GroupedQueryAttention(16, 4, 1), 4, 1),  # = MQA
]

# every module, for the generic checks: (id, factory, d_model)
ALL_MODULES = [
    ("mha-16x4", lambda: MultiHeadAttention(16, 4), 16),
    ("fused-16x4", lambda: FusedMultiHeadAttention(16, 4), 16),
    ("mqa-16x4", lambda: MultiQueryAttention(16, 4), 16),
    ("gqa-24x6/2", lambda: GroupedQueryAttention(24, 6, 2), 24),
    ("mla-32", lambda: MultiHeadLatentAttention(**MLA_CONFIGS[0]), 32),
    ("mla-odd", lambda: MultiHeadLatentAttention(**MLA_CONFIGS[1]), 16),
]


# --- contracts (the exercise contracts) ----------------------------------------------------------------------


def parameter_shapes(module: nn.Module) -> dict[str, tuple]:
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


@pytest.mark.parametrize(
    "module, expected",
    [
        (MultiHeadAttention(12, 3), {f"{n}_proj.{w}": s for n in "qkvo" for w, s in [("weight", (12, 12)), ("bias", (12,))]}),
        (FusedMultiHeadAttention(12, 3), {"qkv_proj.weight": (36, 12), "qkv_proj.bias": (36,),
                                          "o_proj.weight": (12, 12), "o_proj.bias": (12,)}),
        (MultiQueryAttention(12, 3), {"q_proj.weight": (12, 12), "q_proj.bias": (12,), "k_proj.weight": (4, 12),
                                      "k_proj.bias": (4,), "v_proj.weight": (4, 12), "v_proj.bias": (4,),
                                      "o_proj.weight": (12, 12), "o_proj.bias": (12,)}),
        (GroupedQueryAttention(24, 6, 2), {"q_proj.weight": (24, 24), "q_proj.bias": (24,), "k_proj.weight": (8, 24),
                                           "k_proj.bias": (8,), "v_proj.weight": (8, 24), "v_proj.bias": (8,),
                                           "o_proj.weight": (24, 24), "o_proj.bias": (24,)}),
        (MultiHeadLatentAttention(**MLA_CONFIGS[0]), {
            "wq_a.weight": (12, 32), "q_norm.weight": (12,), "wq_b.weight": (4 * 12, 12),
            "wkv_a.weight": (16 + 4, 32), "kv_norm.weight": (16,), "wkv_b.weight": (4 * (8 + 6), 16),
            "wo.weight": (32, 4 * 6)}),
    ],
    ids=["mha-12x3", "fused-12x3", "mqa-12x3", "gqa-24x6/2", "mla-32"],
)
def test_parameter_contract(module, expected):
    assert parameter_shapes(module) == expected


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


# --- MHA / fused / MQA / GQA against torch's SDPA ---------------------------------------------


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("case", PROJECTION_CASES, ids=[c[0] for c in PROJECTION_CASES])
def test_projection_modules_match_sdpa(case, B, T, padding, is_causal):
    _, factory, num_heads, num_kv_heads = case
    module = seed_parameters(factory())
    C = module.o_proj.in_features
    x, mask = inputs(B, T, C, padding)
    out = module(x, attention_mask=mask, is_causal=is_causal)
    assert out.shape == (B, T, C) and out.dtype == F64
    assert_close(out, reference_attention(module, x, mask, is_causal, num_heads, num_kv_heads), mask)


@pytest.mark.parametrize("padding, is_causal", MASKS, ids=MASK_IDS)
@pytest.mark.parametrize("d_model, num_heads", [(16, 4), (12, 3), (8, 1)])
def test_fused_equals_mha_with_copied_weights(d_model, num_heads, padding, is_causal):
    mha = seed_parameters(MultiHeadAttention(d_model, num_heads))
    fused = FusedMultiHeadAttention(d_model, num_heads).to(F64).eval()
    with torch.no_grad():
        fused.qkv_proj.weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        fused.qkv_proj.bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        fused.o_proj.load_state_dict(mha.o_proj.state_dict())
    x, mask = inputs(3, 8, d_model, padding)
    assert_close(fused(x, mask, is_causal), mha(x, mask, is_causal), mask)


@pytest.mark.parametrize("d_model, num_heads, num_kv_heads", [(16, 4, 2), (24, 6, 2), (24, 6, 3)])
def test_gqa_groups_consecutive_heads(d_model, num_heads, num_kv_heads):
    """Head by head, without SDPA: query head h reads KV head h // (H // KV); tiling would differ."""
    module = seed_parameters(GroupedQueryAttention(d_model, num_heads, num_kv_heads))
    x, mask = inputs(2, 5, d_model, padding=True)
    B, T, C = x.shape
    D, G = C // num_heads, num_heads // num_kv_heads
    q = module.q_proj(x).reshape(B, T, num_heads, D)
    k = module.k_proj(x).reshape(B, T, num_kv_heads, D)
    v = module.v_proj(x).reshape(B, T, num_kv_heads, D)

    def heads(kv_head_of):
        outs = []
        for h in range(num_heads):
            scores = torch.einsum("bid,bjd->bij", q[:, :, h], k[:, :, kv_head_of(h)]) / math.sqrt(D)
            scores = scores.masked_fill(~mask[:, None, :], -1e30)
            outs.append(torch.einsum("bij,bjd->bid", scores.softmax(-1), v[:, :, kv_head_of(h)]))
        return module.o_proj(torch.cat(outs, dim=-1))

    out = module(x, attention_mask=mask)
    assert_close(out, heads(lambda h: h // G), mask)
    tiled = heads(lambda h: h % num_kv_heads)  # the classic `repeat` mistake
    assert (graded(out, mask) - graded(tiled, mask)).abs().max() > 1e-3


# --- causal functions -------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 5, 8])
def test_causal_mask_values(T):
    m = causal_mask(T)
    assert m.dtype == torch.bool and m.shape == (T, T)
    assert all(bool(m[i, j]) == (j <= i) for i in range(T) for j in range(T))
    assert causal_mask(T, device="meta").device.type == "meta"


@pytest.mark.parametrize("padding", [False, True], ids=["plain", "padding"])
@pytest.mark.parametrize("H, D", [(1, 4), (3, 5)])
@pytest.mark.parametrize("B, T", SHAPES)
def test_causal_attention_matches_sdpa(B, T, H, D, padding):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=F64) for _ in range(3))
    mask = right_padding(B, T) if padding else None
    out = causal_attention(q, k, v, attention_mask=mask)
    assert out.shape == (B, H, T, D)
    expected = sdpa(q, k, v, mask, is_causal=True)
    if mask is None:
        torch.testing.assert_close(out, expected, atol=ATOL, rtol=RTOL)
    else:  # graded query positions only: (B, H, T, D) -> (B, T, H, D)[mask]
        assert_close(out.transpose(1, 2), expected.transpose(1, 2), mask)


# --- MLA against a second, DeepSeek-style implementation --------------------------------------


def ds_precompute_freqs_cis(dim: int, seqlen: int, base: float) -> torch.Tensor:
    """DeepSeek-V3 inference/model.py (without YaRN), in float64."""
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=F64) / dim))
    t = torch.arange(seqlen, dtype=F64)
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
    additive = torch.zeros(bsz, seqlen, seqlen, dtype=F64)  # (b, s, t)
    if mask is not None:
        additive = additive.masked_fill(~mask[:, None, :], float("-inf"))
    if is_causal:
        additive = additive + torch.full((seqlen, seqlen), float("-inf"), dtype=F64).triu(1)
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
    assert out.shape == (B, T, config["d_model"]) and out.dtype == F64
    assert_close(out, ds_mla(module, x, mask, is_causal), mask)


@pytest.mark.parametrize("B, T", SHAPES)
@pytest.mark.parametrize("config", MLA_CONFIGS, ids=["h4", "h1-odd-nope", "h3-rope6"])
def test_mla_absorbed_equals_naive(config, B, T):
    """The absorbed form (the mla_decode reference behind compare's row) on a causal prefill; the
    decode steps are held against the naive form in the decoding exercise's own test module."""
    naive = seed_parameters(MultiHeadLatentAttention(**config), seed=5)
    absorbed = AbsorbedMultiHeadLatentAttention(**config).to(F64).eval()
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
    x = torch.randn(2, T, 3, dim, generator=g, dtype=F64)
    freqs_cis = precompute_freqs_cis(dim, T, theta)
    assert freqs_cis.shape == (T, dim // 2) and freqs_cis.is_complex()
    torch.testing.assert_close(freqs_cis, ds_precompute_freqs_cis(dim, T, theta), atol=1e-12, rtol=0)
    out = apply_rotary_emb(x, freqs_cis)
    assert out.shape == x.shape and out.dtype == F64
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
    a, b = torch.randn(2, 8, generator=g, dtype=F64)
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
    x = torch.randn(1, 5, 2, 6, dtype=F64)
    torch.testing.assert_close(
        namespace["apply_rotary_emb"](x, namespace["precompute_freqs_cis"](6, 5, 300.0)),
        apply_rotary_emb(x, precompute_freqs_cis(6, 5, 300.0)),
        atol=0, rtol=0,
    )


# --- generic properties of every module -------------------------------------------------------


@pytest.mark.parametrize("name, factory, d_model", ALL_MODULES, ids=[m[0] for m in ALL_MODULES])
def test_runs_on_meta_device(name, factory, d_model):
    module = factory().to("meta")
    x = torch.empty(2, 5, d_model, device="meta")
    mask = torch.ones(2, 5, dtype=torch.bool, device="meta")
    for kwargs in ({}, {"attention_mask": mask}, {"is_causal": True}, {"attention_mask": mask, "is_causal": True}):
        out = module(x, **kwargs)
        assert out.device.type == "meta" and out.shape == (2, 5, d_model) and out.dtype == x.dtype


def test_causal_functions_run_on_meta_device():
    q = torch.empty(2, 3, 5, 4, device="meta")
    out = causal_attention(q, q, q, attention_mask=torch.ones(2, 5, dtype=torch.bool, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 3, 5, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name, factory, d_model", ALL_MODULES, ids=[m[0] for m in ALL_MODULES])
def test_output_keeps_input_dtype(name, factory, d_model, dtype):
    module = factory().to(dtype).eval()
    x = torch.randn(2, 5, d_model).to(dtype)
    out = module(x, attention_mask=right_padding(2, 5), is_causal=True)
    assert out.dtype == dtype and torch.isfinite(out).all()


@pytest.mark.parametrize("cls, args", [
    (MultiHeadAttention, (16, 4)), (FusedMultiHeadAttention, (16, 4)),
    (MultiQueryAttention, (16, 4)), (GroupedQueryAttention, (16, 4, 2)),
], ids=["mha-16x4", "fused-16x4", "mqa-16x4", "gqa-16x4/2"])
def test_dropout_is_off_in_eval_and_on_in_train(cls, args):
    noisy = seed_parameters(cls(*args, dropout=0.5))
    clean = cls(*args, dropout=0.0).to(F64).eval()
    clean.load_state_dict(noisy.state_dict())
    x, mask = inputs(2, 8, 16, padding=True)
    first, second = noisy(x, mask, True), noisy(x, mask, True)
    assert torch.equal(first, second)
    assert_close(first, clean(x, mask, True), mask)
    noisy.train()
    torch.manual_seed(0)
    trained = noisy(x, mask, True)
    assert (graded(trained, mask) - graded(first, mask)).abs().max() > 1e-3  # dropout is applied at all


@pytest.mark.parametrize("name, factory, d_model", ALL_MODULES, ids=[m[0] for m in ALL_MODULES])
def test_gradients_reach_every_parameter(name, factory, d_model):
    module = seed_parameters(factory())
    x, mask = inputs(2, 5, d_model, padding=True)
    out = module(x, attention_mask=mask, is_causal=True)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(2), dtype=F64)
    (graded(out, mask) * graded(weights, mask)).sum().backward()
    for pname, p in module.named_parameters():
        assert p.grad is not None, f"{pname} got no gradient"
        assert torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, f"{pname} gradient is zero or not finite"
