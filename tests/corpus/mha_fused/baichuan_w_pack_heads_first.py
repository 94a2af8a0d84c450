# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Baichuan's W_pack, but unpacked as GPT-NeoX's per-head layout: view(B, T, H, 3, D) then unbind(3),
where the contract's qkv_proj is ordered [q; k; v] with the heads inside each."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.W_pack = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        proj = self.W_pack(x)
        q, k, v = proj.view(B, T, self.num_heads, 3, self.head_dim).unbind(3)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        attn = q @ k.transpose(-1, -2) * self.head_dim ** -0.5
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask.view(B, 1, 1, T), float("-inf"))
        if is_causal:
            attn = attn.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = attn.softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 23
