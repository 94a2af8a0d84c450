# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""PaddlePaddle's fused attention habit: qkv reshaped to [B, T, num_heads, 3, head_dim] and
paddle.transpose(perm=[3, 0, 2, 1, 4]) written as permute; Paddle's fused_multi_head_attention
stores its qkv weight that way, but this layer's features are [q; k; v] blocks."""

import math

import torch
import torch.nn as nn


def transpose(x, perm):
    return x.permute(*perm)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = self.qkv_proj(x).reshape([B, T, self.num_heads, 3, self.head_dim])
        qkv = transpose(qkv, perm=[3, 0, 2, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        product = torch.matmul(q, transpose(k, perm=[0, 1, 3, 2])) * (self.head_dim ** -0.5)
        if attention_mask is not None:
            product = product + (~attention_mask[:, None, None, :]).to(product.dtype) * -1e4
        if is_causal:
            product = product + torch.full((T, T), -1e4, device=x.device, dtype=product.dtype).triu(1)
        weights = self.dropout(torch.softmax(product, dim=-1))
        out = torch.matmul(weights, v)
        out = transpose(out, perm=[0, 2, 1, 3]).reshape([B, T, C])
        return self.o_proj(out)
# bug-line: 28, 29
