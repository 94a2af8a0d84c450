# attnprep: cross_attention
# expect: passed
"""Correct: BLIP's BertSelfAttention as cross-attention: query / key / value / dense, the mask extended as (1 - mask) * -10000 and added, nn.Softmax made in forward."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    """BLIP / Q-Former BertSelfAttention used as cross-attention: query / key / value, the mask
    extended to (1 - mask) * -10000 and added; an output dense layer."""

    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = d_model // num_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(d_model, self.all_head_size)
        self.key = nn.Linear(d_context or d_model, self.all_head_size)
        self.value = nn.Linear(d_context or d_model, self.all_head_size)
        self.dense = nn.Linear(self.all_head_size, d_model)
        self.dropout = nn.Dropout(dropout)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(*new_x_shape).permute(0, 2, 1, 3)

    def forward(self, x, context, context_mask=None):
        key_layer = self.transpose_for_scores(self.key(context))
        value_layer = self.transpose_for_scores(self.value(context))
        query_layer = self.transpose_for_scores(self.query(x))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if context_mask is not None:
            extended = context_mask[:, None, None, :].to(dtype=x.dtype)
            extended = (1.0 - extended) * -10000.0
            attention_scores = attention_scores + extended
        attention_probs = nn.Softmax(dim=-1)(attention_scores)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        return self.dense(context_layer)
