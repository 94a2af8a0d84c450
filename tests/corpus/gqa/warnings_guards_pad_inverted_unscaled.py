# attnprep: gqa
# expect: mask_leak
# diagnosis: padding_mask_inverted + missing_scale
"""warnings.warn guards (an odd head split, a float mask) instead of asserts; the padding mask was
used as "positions to hide" without the ~, and the scores were never divided by sqrt(head_dim)."""
import warnings

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads:
            warnings.warn("d_model is not a multiple of num_heads", stacklevel=2)
        if num_heads % num_kv_heads:
            warnings.warn("num_heads is not a multiple of num_kv_heads", stacklevel=2)
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2).repeat_interleave(H // G, dim=1)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2).repeat_interleave(H // G, dim=1)
        scores = q @ k.transpose(-2, -1)
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                warnings.warn("attention_mask should be bool; casting", stacklevel=2)
                attention_mask = attention_mask.bool()
            scores = scores.masked_fill(attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 33, 38
