# attnprep: mla_decode
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Heads folded into the rows for bmm; the causal mask compares key j with the new index t, not with past + t."""
import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim: int, end: int, theta: float, device=None) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))
    t = torch.arange(end, device=device).float()
    return torch.polar(torch.ones(end, dim // 2, device=device), torch.outer(t, freqs))


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    xc = torch.view_as_complex(x.float().contiguous().reshape(*x.shape[:-1], -1, 2))
    shape = [1] * xc.dim()
    shape[1], shape[-1] = xc.size(1), xc.size(-1)
    return torch.view_as_real(xc * freqs_cis.view(shape)).flatten(-2).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int,
                 qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0) -> None:
        super().__init__()
        self.n_heads, self.kv_lora_rank, self.theta = num_heads, kv_lora_rank, rope_theta
        self.nope, self.rope, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x: torch.Tensor, cache: Optional[Tuple[torch.Tensor, torch.Tensor]] = None):
        B, T, _ = x.shape
        H, C = self.n_heads, self.kv_lora_rank
        start = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(self.rope, start + T, self.theta, x.device)[start:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, -1)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c, kr = torch.split(self.wkv_a(x), [C, self.rope], -1)
        c = self.kv_norm(c)
        kr = apply_rotary_emb(kr, freqs)  # (B, T, r)
        if cache is not None:
            c, kr = torch.cat((cache[0], c), 1), torch.cat((cache[1], kr), 1)
        S = c.shape[1]
        w = self.wkv_b.weight.view(H, self.nope + self.v_dim, C)
        w_uk, w_uv = w[:, : self.nope, :], w[:, self.nope:, :]
        q_lat = torch.matmul(q_nope.transpose(1, 2), w_uk).transpose(1, 2)  # (B,H,T,nope)@(H,nope,C) -> (B,T,H,C)
        rows_lat = q_lat.reshape(B, T * H, C)
        rows_pe = q_pe.reshape(B, T * H, self.rope)
        scores = torch.bmm(rows_lat, c.transpose(1, 2)) + torch.bmm(rows_pe, kr.transpose(1, 2))  # (B, T*H, S)
        scores = scores.view(B, T, H, S) / math.sqrt(self.nope + self.rope)
        allowed = torch.arange(S, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None]
        scores = torch.where(allowed[None, :, None, :], scores, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores.float(), dim=-1).to(x.dtype)
        o_lat = torch.bmm(probs.view(B, T * H, S), c).view(B, T, H, C)
        o = torch.matmul(o_lat.transpose(1, 2), w_uv.transpose(1, 2)).transpose(1, 2)  # (B, T, H, dv)
        return self.wo(o.reshape(B, T, H * self.v_dim)), (c, kr)
# bug-line: 61
