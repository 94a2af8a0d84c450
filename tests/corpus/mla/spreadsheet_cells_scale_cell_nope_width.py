# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""A spreadsheet modeller's habits: the sizes are cells of a sheet (A1 = heads, B2 = nope, ...)
with the formula of each derived cell written beside it, and the computation reads cells by
address; the scale's cell was pointed at the nope width's cell instead of the q head width's."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2))
    pairs = pairs.clone(memory_format=torch.contiguous_format)
    x_c = torch.view_as_complex(pairs)
    y = x_c * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        sheet = {}
        sheet["A1"] = num_heads
        sheet["B1"] = q_lora_rank
        sheet["C1"] = kv_lora_rank
        sheet["B2"] = qk_nope_head_dim
        sheet["C2"] = qk_rope_head_dim
        sheet["D2"] = v_head_dim
        sheet["B3"] = sheet["B2"] + sheet["C2"]  # =B2+C2  (q / k head width)
        sheet["D3"] = sheet["B2"] + sheet["D2"]  # =B2+D2  (wkv_b's per-head rows)
        sheet["E3"] = 1.0 / math.sqrt(sheet["B2"])  # =1/SQRT(B2)  softmax scale
        sheet["F1"] = rope_theta
        self.sheet = sheet
        self.wq_a = nn.Linear(d_model, sheet["B1"], bias=False)
        self.q_norm = RMSNorm(sheet["B1"])
        self.wq_b = nn.Linear(sheet["B1"], sheet["A1"] * sheet["B3"], bias=False)
        self.wkv_a = nn.Linear(d_model, sheet["C1"] + sheet["C2"], bias=False)
        self.kv_norm = RMSNorm(sheet["C1"])
        self.wkv_b = nn.Linear(sheet["C1"], sheet["A1"] * sheet["D3"], bias=False)
        self.wo = nn.Linear(sheet["A1"] * sheet["D2"], d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        S = self.sheet
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, S["A1"], S["B3"])
        q_nope, q_pe = q.split([S["B2"], S["C2"]], dim=-1)
        kv = self.wkv_a(x)
        c_kv, k_pe = kv.split([S["C1"], S["C2"]], dim=-1)
        freqs = precompute_freqs_cis(S["C2"], T, S["F1"], device=x.device)
        q_pe = apply_rotary_emb(q_pe, freqs)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs)  # (B, T, 1, rope)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, S["A1"], S["D3"])
        k_nope, v = kv.split([S["B2"], S["D2"]], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, S["A1"], -1)], dim=-1)
        scores = torch.einsum("bshd,bthd->bhst", q, k) * S["E3"]
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        probs = scores.softmax(dim=-1)
        out = torch.einsum("bhst,bthd->bshd", probs, v).reshape(B, T, S["A1"] * S["D2"])
        return self.wo(out)
# bug-line: 51
