# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""MiniCPM3's attention (DeepSeek-V2's MLA under Hugging Face names), each projection on a line of
its own: q_a_proj, then q_b_proj straight on its output; the q_a_layernorm it builds is never applied
(the latent of the keys is normalised). RoPE as rotated complex pairs, scores by einsum."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniCPMRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


def rope_pairs(x, theta):
    # x: (bsz, seq, heads, d), pairs (2i, 2i+1) rotated as complex numbers
    seq, d = x.shape[1], x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = torch.outer(torch.arange(seq, dtype=torch.float64, device=x.device), inv_freq)
    rot = torch.polar(torch.ones_like(angles), angles)[None, :, None, :]
    xc = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(xc * rot).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = MiniCPMRMSNorm(q_lora_rank)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = MiniCPMRMSNorm(kv_lora_rank)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        bsz, q_len, _ = hidden_states.shape
        nh, dn, dr, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        q_latent = self.q_a_proj(hidden_states)
        ckv = self.kv_a_proj_with_mqa(hidden_states)
        ckv, k_pe = ckv.split([self.kv_lora_rank, dr], dim=-1)
        q = self.q_b_proj(q_latent).view(bsz, q_len, nh, dn + dr)
        q_nope, q_pe = q.split([dn, dr], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(ckv)).view(bsz, q_len, nh, dn + dv)
        k_nope, value_states = kv.split([dn, dv], dim=-1)
        q_pe = rope_pairs(q_pe, self.rope_theta)
        k_pe = rope_pairs(k_pe[:, :, None, :], self.rope_theta)
        attn = (torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope)
                + torch.einsum("bqhr,bkxr->bhqk", q_pe, k_pe)) * self.softmax_scale
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            future = torch.ones(q_len, q_len, dtype=torch.bool, device=hidden_states.device).triu(1)
            attn = attn.masked_fill(future, float("-inf"))
        attn = F.softmax(attn, dim=-1)
        out = torch.einsum("bhqk,bkhd->bqhd", attn, value_states)
        return self.o_proj(out.reshape(bsz, q_len, nh * dv))
# bug-line: 58
