# attnprep: mha_fused
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""BLOOM's BloomAttention habits without ALiBi: query_key_value, _split_heads returning three
(B, T, H, D) tensors, heads folded into the batch, baddbmm(beta=0) with inv_norm_factor,
dense as the output layer, a bool causal_mask made by _make_causal_mask."""
import math

import torch
import torch.nn as nn


def _make_causal_mask(T, device):
    mask = torch.empty((T, T), dtype=torch.bool, device=device)
    seq_ids = torch.arange(T, device=device)
    mask[:, :] = seq_ids[:, None] < seq_ids[None, :]            # True = blocked
    return mask


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.query_key_value = nn.Linear(d_model, 3 * d_model, bias=True)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _split_heads(self, fused_qkv):
        B, T, _ = fused_qkv.shape
        fused_qkv = fused_qkv.view(B, T, 3, self.num_heads, self.head_dim)
        return fused_qkv[:, :, 0], fused_qkv[:, :, 1], fused_qkv[:, :, 2]

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        query_layer, key_layer, value_layer = self._split_heads(self.query_key_value(x))
        query_layer = query_layer.transpose(1, 2).reshape(B * self.num_heads, T, self.head_dim)
        key_layer = key_layer.permute(0, 2, 3, 1).reshape(B * self.num_heads, self.head_dim, T)
        value_layer = value_layer.transpose(1, 2).reshape(B * self.num_heads, T, self.head_dim)
        scores = torch.empty(B * self.num_heads, T, T, dtype=x.dtype, device=x.device)
        scores = scores.baddbmm(query_layer, key_layer, beta=0.0, alpha=self.inv_norm_factor)
        scores = scores.view(B, self.num_heads, T, T)
        if is_causal:
            blocked = _make_causal_mask(T, x.device)[None, None]
        elif attention_mask is not None:
            blocked = ~attention_mask[:, None, None, :]
        else:
            blocked = torch.zeros(1, 1, T, T, dtype=torch.bool, device=x.device)
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
        probs = self.attention_dropout(torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype))
        ctx = torch.bmm(probs.view(B * self.num_heads, T, T), value_layer)
        ctx = ctx.view(B, self.num_heads, T, self.head_dim).permute(0, 2, 1, 3).reshape(B, T, self.hidden_size)
        return self.dense(ctx)
# bug-line: 47
