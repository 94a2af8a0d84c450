# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped
# The mistake: the latent goes into wkv_b without kv_norm.
# MaxText-style kernels kept in their einsum shapes: wq_b (q_lora_rank, H, nope+rope), wkv_b
# (kv_lora_rank, H, nope+v), wo (H, v, d_model), the down projections (d_model, r) as (in, out)
# kernels; the norms' gains named scale.
import math
import torch
import torch.nn as nn


def rope_interleaved(x, theta):  # x (B, T, h, r)
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float64, device=x.device) / r)
    ang = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * inv
    z = torch.view_as_complex(x.double().unflatten(-1, (-1, 2)).contiguous()) * torch.polar(torch.ones_like(ang), ang)[None, :, None]
    return torch.view_as_real(z).flatten(-2).to(x.dtype)


def rms(x, scale, eps=1e-6):
    h = x.float()
    return scale * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv, self.theta = (num_heads, kv_lora_rank, qk_nope_head_dim,
                                                                      qk_rope_head_dim, v_head_dim, rope_theta)
        init = lambda *shape: nn.Parameter(torch.randn(*shape) * 0.05)
        self.wq_a = init(d_model, q_lora_rank)
        self.q_norm_scale = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = init(q_lora_rank, num_heads, qk_nope_head_dim + qk_rope_head_dim)
        self.wkv_a = init(d_model, kv_lora_rank + qk_rope_head_dim)
        self.kv_norm_scale = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = init(kv_lora_rank, num_heads, qk_nope_head_dim + v_head_dim)
        self.wo = init(num_heads, v_head_dim, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = torch.einsum("btr,rhd->bthd", rms(x @ self.wq_a, self.q_norm_scale), self.wq_b)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        c_kv, k_pe = (x @ self.wkv_a).split([self.c, self.rope], -1)
        kv = torch.einsum("btc,chd->bthd", c_kv, self.wkv_b)
        k_nope, v = kv.split([self.nope, self.dv], -1)
        q_pe = rope_interleaved(q_pe, self.theta)
        k_pe = rope_interleaved(k_pe[:, :, None], self.theta)[:, :, 0]
        s = torch.einsum("bthd,bshd->bhts", q_nope, k_nope) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)
        s = s / math.sqrt(self.nope + self.rope)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bhts,bshd->bthd", s.softmax(-1), v)
        return torch.einsum("bthd,hdm->btm", o, self.wo)
# bug-line: 46
