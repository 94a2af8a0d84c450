# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scale_d_model
"""Swin Transformer's WindowAttention habits: qkv_bias / qk_scale / attn_drop / proj_drop
arguments, `self.scale = qk_scale or ...` chosen in the constructor, q multiplied by the scale
before the product, qkv reshaped (B_, N, 3, heads, C // heads) and permuted (2, 0, 3, 1, 4), an
nn.Softmax module; the fallback scale was written with the layer's width instead of the head's."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, qkv_bias=True, qk_scale=None, proj_drop=0.0):
        super().__init__()
        self.dim = d_model
        self.num_heads = num_heads
        head_dim = d_model // num_heads
        self.scale = qk_scale or d_model ** -0.5
        self.qkv_proj = nn.Linear(d_model, d_model * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(dropout)
        self.o_proj = nn.Linear(d_model, d_model)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, attention_mask=None, is_causal=False):
        B_, N, C = x.shape
        qkv = self.qkv_proj(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # each (B_, heads, N, hd)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        # Swin adds relative_position_bias and a shifted-window mask here; we have padding and causality
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask.view(B_, 1, 1, N), float("-inf"))
        if is_causal:
            attn = attn.masked_fill(torch.ones(N, N, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        attn = self.attn_drop(self.softmax(attn))
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj_drop(self.o_proj(x))
# bug-line: 18
