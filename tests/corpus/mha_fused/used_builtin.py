# attnprep: mha_fused
# expect: used_builtin
# diagnosis: used_builtin
"""Fused projection by hand, then F.scaled_dot_product_attention with is_causal / attn_mask."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.dropout = dropout
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.num_heads, -1).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)

        mask = None
        if attention_mask is not None:
            mask = attention_mask[:, None, None, :]  # True = attend
            if is_causal:
                mask = mask & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        out = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=is_causal and mask is None,
        )
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
