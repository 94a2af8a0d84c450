# attnprep: gqa
# expect: passed
"""FlexAttention's GQA in eager torch: no repeat_kv at all; each query head reads its KV head
through an index tensor (kv_head = h // group), a score_mod for the scale and mask_mods joined."""
import torch
import torch.nn as nn


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def padding(keep):
    return lambda b, h, q_idx, kv_idx: keep[b, kv_idx]


def everything(b, h, q_idx, kv_idx):
    return (q_idx >= 0) & (kv_idx >= 0)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.Hq, self.Hkv = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p_drop = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.Hq, self.D).transpose(1, 2)      # (B, Hq, T, D)
        k = self.k_proj(x).view(B, T, self.Hkv, self.D).transpose(1, 2)     # (B, Hkv, T, D)
        v = self.v_proj(x).view(B, T, self.Hkv, self.D).transpose(1, 2)
        kv_head = torch.arange(self.Hq, device=x.device) // (self.Hq // self.Hkv)
        k_q, v_q = k[:, kv_head], v[:, kv_head]                              # (B, Hq, T, D)
        score = torch.einsum("bhqd,bhkd->bhqk", q, k_q) * self.D ** -0.5
        b = torch.arange(B, device=x.device)[:, None, None, None]
        h = torch.arange(self.Hq, device=x.device)[None, :, None, None]
        qi = torch.arange(T, device=x.device)[None, None, :, None]
        ki = torch.arange(T, device=x.device)[None, None, None, :]
        keep = everything(b, h, qi, ki)
        if is_causal:
            keep = keep & causal(b, h, qi, ki)
        if attention_mask is not None:
            keep = keep & padding(attention_mask)(b, h, qi, ki)
        p = score.masked_fill(~keep, float("-inf")).softmax(-1)
        p = nn.functional.dropout(p, self.p_drop, self.training)
        out = torch.einsum("bhqk,bhkd->bqhd", p, v_q).reshape(B, T, C)
        return self.o_proj(out)
