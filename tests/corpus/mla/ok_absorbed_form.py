# attnprep: mla
# expect: passed
"""The exercise answered in DeepSeek's attn_impl='absorb' form (what people remember from inference/model.py): wkv_b.weight viewed (H, nope+v, c), q_nope absorbed into the latent, scores against kv_norm(c_kv) + q_pe·k_pe, W_UV after the weighted sum."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim, seqlen, theta, device=None):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim))
    freqs = torch.outer(torch.arange(seqlen, device=device, dtype=torch.float32), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x, freqs_cis):
    dtype = x.dtype
    x = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    y = torch.view_as_real(x * freqs_cis.view(1, x.size(1), 1, x.size(-1))).flatten(3)
    return y.to(dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_local_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.size()
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, seqlen, self.rope_theta, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_local_heads, -1)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        wkv_b = self.wkv_b.weight.view(self.n_local_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.qk_nope_head_dim])
        kv = self.kv_norm(kv)
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe.squeeze(2))) * self.softmax_scale
        if is_causal:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu_(1)
            scores += mask.unsqueeze(1)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,btc->bshc", scores, kv)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.v_head_dim:])
        return self.wo(x.flatten(2))
