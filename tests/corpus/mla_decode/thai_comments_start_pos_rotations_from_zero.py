# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""คอมเมนต์ภาษาไทย (Thai comments), DeepSeek's start_pos / end_pos names and the absorb path written as
in inference/model.py (wkv_b viewed per head, q_nope absorbed, scores from two einsums); the
rotations computed for the new tokens' count only, so every call rotates from position 0 (the
prefill is right, a decode step is not)."""
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].size(1)  # จำนวนโทเค็นในแคช
        end_pos = start_pos + seqlen
        nope, rope, dv, c = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim, self.kv_lora_rank
        freqs_cis = precompute_freqs_cis(rope, seqlen, self.rope_theta, x.device)  # การหมุนของโทเค็นใหม่
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, nope + rope)
        q_nope, q_pe = torch.split(q, [nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [c, rope], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        if cache is not None:  # ต่อท้ายแคชเดิม
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        wkv_b = self.wkv_b.weight.view(self.n_heads, -1, c)  # แถวของแต่ละหัว: [nope; v]
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :nope])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu(start_pos + 1)
        scores = scores + mask[:, None, :]
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,btc->bshc", scores, kv)
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -dv:])
        return self.wo(out.flatten(2)), (kv, k_pe)
# bug-line: 61
