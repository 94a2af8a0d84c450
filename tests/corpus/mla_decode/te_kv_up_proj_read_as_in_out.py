# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_transpose
"""NVIDIA TransformerEngine / Megatron-core MLA naming: linear_q_down_proj, q_layernorm,
linear_q_up_proj, linear_kv_down_proj, kv_layernorm, linear_kv_up_proj, linear_proj; a `core_attention`
helper with qkv_format="bshd" and attn_mask_type strings; softmax in float32. In the absorbed decode
path the up-projection's weight is viewed as if it were stored (in, out) = (c, H, nope + v), so W_UK
and W_UV are read transposed."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, inp):
        x = inp.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(inp.dtype)


def rotary_interleaved(t, start, theta):
    """t (b, s, ..., d): DeepSeek's adjacent pairs rotated at positions start .. start + s - 1."""
    s, d = t.shape[1], t.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, device=t.device, dtype=torch.float32) / d)
    pos = torch.arange(start, start + s, device=t.device, dtype=torch.float32)
    emb = torch.outer(pos, inv).view((1, s) + (1,) * (t.dim() - 3) + (d // 2,))
    even, odd = t.float()[..., 0::2], t.float()[..., 1::2]
    out = torch.stack((even * emb.cos() - odd * emb.sin(), even * emb.sin() + odd * emb.cos()), dim=-1)
    return out.flatten(-2).type_as(t)


def core_attention(scores, latents, attn_mask_type, q_offset):
    """scores (b, s_q, h, s_kv); attn_mask_type "causal_bottom_right": query i sits at q_offset + i."""
    s_q, s_kv = scores.shape[1], scores.shape[-1]
    if attn_mask_type == "causal_bottom_right":
        allowed = torch.ones(s_q, s_kv, dtype=torch.bool, device=scores.device).tril(q_offset)
        scores = scores.masked_fill(~allowed[:, None, :], float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).type_as(scores)
    return torch.einsum("bqhk,bkc->bqhc", probs, latents)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_head_dim, self.qk_pos_emb_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rotary_base = rope_theta
        self.softmax_scale = 1.0 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)
        self.linear_q_down_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_layernorm = RMSNorm(q_lora_rank)
        self.linear_q_up_proj = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.linear_kv_down_proj = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_layernorm = RMSNorm(kv_lora_rank)
        self.linear_kv_up_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.linear_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, hidden_states, cache=None):
        b, s, _ = hidden_states.shape
        h, dn, dr, dv = self.num_attention_heads, self.qk_head_dim, self.qk_pos_emb_head_dim, self.v_head_dim
        c = self.kv_lora_rank
        past = 0 if cache is None else cache[0].shape[1]
        q = self.linear_q_up_proj(self.q_layernorm(self.linear_q_down_proj(hidden_states))).view(b, s, h, dn + dr)
        q_no_pe, q_pos_emb = torch.split(q, [dn, dr], dim=-1)
        q_pos_emb = rotary_interleaved(q_pos_emb, past, self.rotary_base)
        kv_compressed, k_pos_emb = torch.split(self.linear_kv_down_proj(hidden_states), [c, dr], dim=-1)
        kv_compressed = self.kv_layernorm(kv_compressed)
        k_pos_emb = rotary_interleaved(k_pos_emb, past, self.rotary_base)  # (b, s, dr)
        if cache is not None:
            kv_compressed = torch.cat([cache[0], kv_compressed], dim=1)
            k_pos_emb = torch.cat([cache[1], k_pos_emb], dim=1)
        up = self.linear_kv_up_proj.weight.view(c, h, dn + dv)
        q_absorbed = torch.einsum("bshd,chd->bshc", q_no_pe, up[:, :, :dn])  # (b, s, h, c)
        scores = (torch.einsum("bshc,bkc->bshk", q_absorbed, kv_compressed)
                  + torch.einsum("bshr,bkr->bshk", q_pos_emb, k_pos_emb)) * self.softmax_scale
        ctx = core_attention(scores, kv_compressed, "causal_bottom_right", past)  # (b, s, h, c)
        out = torch.einsum("bshc,chd->bshd", ctx, up[:, :, dn:])  # (b, s, h, dv)
        return self.linear_proj(out.reshape(b, s, h * dv)), (kv_compressed, k_pos_emb)
# bug-line: 80
