# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""One additive bias chosen by an if / elif / else chain (causal, else padding, else nothing),
expand-based grouping of the KV heads, scores in float32."""
import math

import torch
import torch.nn as nn


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
        k = self.k_proj(x).view(B, T, self.nkv, 1, self.hd).expand(B, T, self.nkv, self.nh // self.nkv, self.hd)
        v = self.v_proj(x).view(B, T, self.nkv, 1, self.hd).expand(B, T, self.nkv, self.nh // self.nkv, self.hd)
        k = k.reshape(B, T, self.nh, self.hd).transpose(1, 2)
        v = v.reshape(B, T, self.nh, self.hd).transpose(1, 2)
        scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(self.hd)
        if is_causal:
            bias = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        elif attention_mask is not None:
            bias = torch.zeros(B, 1, 1, T, device=x.device).masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        else:
            bias = torch.zeros(1, device=x.device)
        probs = (scores + bias).softmax(dim=-1).to(x.dtype)
        out = (probs @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 31
