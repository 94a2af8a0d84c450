# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero + mla_absorb_rows
"""MiniCPM3-like names on the absorbed decode path (q_a_proj / q_a_layernorm / q_b_proj,
kv_a_proj_with_mqa / kv_a_layernorm / kv_b_proj / o_proj), a rotary cache built per call, W_UK and W_UV
sliced out of kv_b_proj.weight by unflatten; the cache is a (compressed_kv, k_pe) pair."""
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class MiniCPMRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(hidden_states.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope = qk_nope_head_dim
        self.rope = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = MiniCPMRMSNorm(q_lora_rank)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = MiniCPMRMSNorm(kv_lora_rank)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]
        kv_len = past + q_len
        freqs_cis = precompute_freqs_cis(self.rope, q_len, self.rope_theta, device=x.device)
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(bsz, q_len, self.num_heads, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        compressed_kv, k_pe = self.kv_a_proj_with_mqa(x).split([self.kv_lora_rank, self.rope], dim=-1)
        compressed_kv = self.kv_a_layernorm(compressed_kv)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs_cis)[:, :, 0, :]
        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        w = self.kv_b_proj.weight.unflatten(0, (self.nope + self.v_head_dim, self.num_heads)).transpose(0, 1)
        w_uk, w_uv = w[:, : self.nope], w[:, self.nope:]
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w_uk)
        scores = torch.einsum("bthc,bsc->bths", q_lat, compressed_kv) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
        scores = scores * self.softmax_scale
        visible = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).tril(past)
        scores = scores.masked_fill(~visible[:, None, :], float("-inf"))
        probs = scores.softmax(dim=-1)
        ctx = torch.einsum("bths,bsc->bthc", probs, compressed_kv)
        out = torch.einsum("bthc,hdc->bthd", ctx, w_uv)
        return self.o_proj(out.flatten(2)), (compressed_kv, k_pe)
# bug-line: 58, 68
