# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped + causal_masks_diagonal
"""The forward as a list of functools.partial stages run in order over a dict of named values (a
pipeline someone can print, reorder and time), DeepSeek's complex rotary; the query's latent never
goes through q_norm, and the causal mask blocks the diagonal too."""
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def freqs_cis(dim, T, theta, device):
    f = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    ang = torch.outer(torch.arange(T, dtype=torch.float64, device=device), f)
    return torch.polar(torch.ones_like(ang), ang)


def rotate(x, fc):  # x (B, T, H, r)
    xc = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(xc * fc[None, :, None, :]).flatten(-2).to(x.dtype)


def stage_query(m, env):
    B, T, _ = env["x"].shape
    env["q"] = m.wq_b(m.wq_a(env["x"])).view(B, T, m.h, -1)


def stage_kv(m, env):
    B, T, _ = env["x"].shape
    c_kv, k_pe = m.wkv_a(env["x"]).split([m.c, m.rope], dim=-1)
    env["kv"] = m.wkv_b(m.kv_norm(c_kv)).view(B, T, m.h, -1)
    env["k_pe"] = k_pe[:, :, None, :]


def stage_rotary(m, env):
    T = env["x"].shape[1]
    fc = freqs_cis(m.rope, T, m.theta, env["x"].device)
    q_nope, q_pe = env["q"].split([m.nope, m.rope], dim=-1)
    env["q"] = torch.cat([q_nope, rotate(q_pe, fc)], dim=-1)
    k_pe = rotate(env["k_pe"], fc).expand(-1, -1, m.h, -1)
    k_nope, env["v"] = env["kv"].split([m.nope, m.dv], dim=-1)
    env["k"] = torch.cat([k_nope, k_pe], dim=-1)


def stage_attend(m, env, *, mask, causal):
    q, k, v = (env[n].transpose(1, 2) for n in "qkv")
    T = q.shape[2]
    s = q @ k.transpose(-2, -1) / math.sqrt(m.nope + m.rope)
    if mask is not None:
        s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=s.device).triu(0), float("-inf"))
    env["o"] = (F.softmax(s, dim=-1) @ v).transpose(1, 2).flatten(2)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c, self.nope, self.rope, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        stages = [
            functools.partial(stage_query, self),
            functools.partial(stage_kv, self),
            functools.partial(stage_rotary, self),
            functools.partial(stage_attend, self, mask=attention_mask, causal=is_causal),
        ]
        env = {"x": x}
        for stage in stages:
            stage(env)
        return self.wo(env["o"])
# bug-line: 39, 66
