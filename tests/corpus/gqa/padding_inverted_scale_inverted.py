# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_inverted + scale_inverted
"""Llama repeat_kv; scores multiplied by sqrt(head_dim), and the padding mask filled where True."""
import math
import torch
import torch.nn as nn


def repeat_kv(h, n_rep):
    b, n, s, d = h.shape
    return h[:, :, None].expand(b, n, n_rep, s, d).reshape(b, n * n_rep, s, d)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = repeat_kv(self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2), self.nh // self.nkv)
        v = repeat_kv(self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2), self.nh // self.nkv)
        s = q @ k.transpose(2, 3) * math.sqrt(self.hd)
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
