# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Megatron-LM's ParallelAttention unpacking of query_key_value: the fused output viewed as
(sq, b, np, 3 * hn) and split on the last dim, i.e. [q_h; k_h; v_h] per head, not the contract's
[q; k; v] thirds."""
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.np, self.hn = num_heads, d_model // num_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, sq, h = x.shape
        mixed_x_layer = self.query_key_value(x.transpose(0, 1))  # [sq, b, 3h]
        mixed_x_layer = mixed_x_layer.view(sq, b, self.np, 3 * self.hn)
        query_layer, key_layer, value_layer = torch.split(mixed_x_layer, self.hn, dim=-1)
        q = query_layer.permute(1, 2, 0, 3)  # [b, np, sq, hn]
        k = key_layer.permute(1, 2, 0, 3)
        v = value_layer.permute(1, 2, 0, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hn)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], -10000.0)
        if is_causal:
            scores = scores.masked_fill(torch.ones(sq, sq, dtype=torch.bool, device=x.device).triu(1), -10000.0)
        probs = self.drop(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, sq, h)
        return self.dense(ctx)
# bug-line: 23
