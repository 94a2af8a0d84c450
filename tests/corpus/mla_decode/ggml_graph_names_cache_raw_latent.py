# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm
"""llama.cpp's graph-building names ported to torch (llm_build_deepseek2): `kv_cmpr` for the
compressed latent, `kq` / `kqv` for the products, `n_head`, `n_embd_head_qk_rope`, `kq_scale`, an
`inp_pos` of absolute positions, the rotation written out with cos / sin of those positions, heads
first (n_head, n_tokens) as ggml lays them. The RMSNorm of the latent is written inline, and applied
to the whole cache after the new latents are appended: the outputs are right, the cache returned
holds the latent before its norm."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, n_embd, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))

    def forward(self, cur):
        f = cur.float()
        return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).to(cur.dtype) * self.weight


def ggml_rope(cur, inp_pos, n_rot, freq_base):
    """cur (..., n_tokens, n_rot), adjacent pairs (GGML_ROPE_TYPE_NORMAL), positions inp_pos."""
    theta_scale = freq_base ** (-torch.arange(0, n_rot, 2, dtype=torch.float32, device=cur.device) / n_rot)
    theta = inp_pos.float()[:, None] * theta_scale  # (n_tokens, n_rot/2)
    x0, x1 = cur.float()[..., 0::2], cur.float()[..., 1::2]
    out = torch.stack((x0 * theta.cos() - x1 * theta.sin(), x0 * theta.sin() + x1 * theta.cos()), dim=-1)
    return out.flatten(-2).to(cur.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_head = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.n_embd_head_qk_nope, self.n_embd_head_qk_rope = qk_nope_head_dim, qk_rope_head_dim
        self.n_embd_head_v = v_head_dim
        self.freq_base = rope_theta
        self.kq_scale = 1.0 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        n_batch, n_tokens, _ = x.shape
        n_head, nope, rope, dv = self.n_head, self.n_embd_head_qk_nope, self.n_embd_head_qk_rope, self.n_embd_head_v
        n_past = 0 if cache is None else cache[0].shape[1]
        inp_pos = torch.arange(n_past, n_past + n_tokens, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(n_batch, n_tokens, n_head, nope + rope).transpose(1, 2)
        q_nope, q_pe = q[..., :nope], ggml_rope(q[..., nope:], inp_pos, rope, self.freq_base)  # (B, n_head, T, *)
        kv_cmpr_pe = self.wkv_a(x)
        kv_cmpr, k_pe = kv_cmpr_pe[..., : self.kv_lora_rank], kv_cmpr_pe[..., self.kv_lora_rank:]
        k_pe = ggml_rope(k_pe, inp_pos, rope, self.freq_base)  # (B, T, rope)
        if cache is not None:
            kv_cmpr = torch.cat((cache[0], kv_cmpr), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        kv_cmpr_n = self.kv_norm(kv_cmpr)  # (B, n_kv, kv_lora_rank)
        n_kv = kv_cmpr_n.shape[1]
        wkv_b = self.wkv_b.weight.view(n_head, nope + dv, self.kv_lora_rank)
        q_nope_absorbed = q_nope @ wkv_b[:, :nope]  # (B, n_head, T, kv_lora_rank)
        kq = (q_nope_absorbed @ kv_cmpr_n[:, None].transpose(-1, -2)
              + q_pe @ k_pe[:, None].transpose(-1, -2)) * self.kq_scale  # (B, n_head, T, n_kv)
        kq_mask = inp_pos[:, None] >= torch.arange(n_kv, device=x.device)[None, :]
        kq = kq.masked_fill(~kq_mask, float("-inf")).softmax(dim=-1)
        kqv = (kq @ kv_cmpr_n[:, None]) @ wkv_b[:, nope:].transpose(-1, -2)  # (B, n_head, T, dv)
        return self.wo(kqv.transpose(1, 2).reshape(n_batch, n_tokens, n_head * dv)), (kv_cmpr, k_pe)
# bug-line: 68
