# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""TensorDict habits without the library: every intermediate goes into one dict keyed by name
(td["q_nope"], td["kv"] ...), select / exclude helpers, RoPE on real pairs (no complex dtype)."""
import torch
import torch.nn as nn


class TD(dict):
    def select(self, *keys):
        return TD({k: self[k] for k in keys})

    def apply(self, fn):
        return TD({k: fn(v) for k, v in self.items()})


def rope_pairs(x, pos, theta):
    # x (B, T, H, r): rotate (x[2i], x[2i+1]) by pos * theta^(-2i/r)
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = pos.float()[:, None] * inv[None, :]               # (T, r/2)
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.nope, self.rope, self.vd = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.kv_lora_rank = kv_lora_rank
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = self.nope ** -0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        pos = torch.arange(T, device=x.device)
        td = TD(x=x)
        q = self.wq_b(self.q_norm(self.wq_a(td["x"]))).view(B, T, self.h, self.nope + self.rope)
        td["q_nope"], td["q_pe"] = q.split([self.nope, self.rope], dim=-1)
        kv = self.wkv_a(td["x"])
        td["c_kv"], k_pe = kv.split([self.kv_lora_rank, self.rope], dim=-1)
        td["q_pe"] = rope_pairs(td["q_pe"], pos, self.theta)
        td["k_pe"] = rope_pairs(k_pe.unsqueeze(2), pos, self.theta)             # (B, T, 1, r)
        kv = self.wkv_b(self.kv_norm(td["c_kv"])).view(B, T, self.h, self.nope + self.vd)
        td["k_nope"], td["v"] = kv.split([self.nope, self.vd], dim=-1)
        td["q"] = torch.cat([td["q_nope"], td["q_pe"]], dim=-1)
        td["k"] = torch.cat([td["k_nope"], td["k_pe"].expand(-1, -1, self.h, -1)], dim=-1)
        heads = td.select("q", "k", "v").apply(lambda t: t.transpose(1, 2))     # (B, H, T, *)
        td["scores"] = heads["q"] @ heads["k"].transpose(-1, -2) * self.softmax_scale
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep.expand(B, 1, T, T)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        td["probs"] = td["scores"].masked_fill(~keep, float("-inf")).softmax(-1)
        td["o"] = (td["probs"] @ heads["v"]).transpose(1, 2).reshape(B, T, self.h * self.vd)
        return self.wo(td["o"])
# bug-line: 54
