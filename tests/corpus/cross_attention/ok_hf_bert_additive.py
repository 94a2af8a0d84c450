# attnprep: cross_attention
# expect: passed
"""Hugging Face BertSelfAttention in its cross-attention role: query/key/value/dense names,
transpose_for_scores, an extended additive mask filled with torch.finfo(dtype).min, nn.Softmax."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = d_model // num_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        encoder_hidden_size = d_context if d_context is not None else d_model
        self.query = nn.Linear(d_model, self.all_head_size)
        self.key = nn.Linear(encoder_hidden_size, self.all_head_size)
        self.value = nn.Linear(encoder_hidden_size, self.all_head_size)
        self.dense = nn.Linear(self.all_head_size, d_model)
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, encoder_hidden_states, encoder_attention_mask=None):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(encoder_hidden_states))
        value_layer = self.transpose_for_scores(self.value(encoder_hidden_states))

        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if encoder_attention_mask is not None:
            # get_extended_attention_mask: (B, S) -> (B, 1, 1, S), 0 to keep, dtype min to drop
            extended = encoder_attention_mask[:, None, None, :].to(dtype=attention_scores.dtype)
            extended = (1.0 - extended) * torch.finfo(attention_scores.dtype).min
            attention_scores = attention_scores + extended

        attention_probs = self.softmax(attention_scores)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return self.dense(context_layer)
