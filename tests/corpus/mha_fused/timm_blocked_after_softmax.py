# attnprep: mha_fused
# expect: mask_leak
# diagnosis: mask_after_softmax
"""timm style: view(B, T, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0), one blocked mask, applied to the probabilities after the softmax (masked_fill 0)."""

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv_proj = nn.Linear(d_model, d_model * 3)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x).view(B, T, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        q, k, v = qkv.unbind(0)

        attn = (q * self.scale) @ k.transpose(-2, -1)  # (B, H, T, T)

        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)  # True = masked out
        if is_causal:
            blocked = blocked | torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]


        attn = attn.softmax(dim=-1).masked_fill(blocked, 0.0)
        attn = self.attn_drop(attn)
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.o_proj(out)
