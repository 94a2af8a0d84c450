# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Hugging Face BERT-ish additive padding mask before the softmax, then the probabilities
multiplied by a float lower-triangular matrix: the causal mask after the softmax."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = d_model // num_heads
        self.all_head_size = d_model
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        query_layer = self.transpose_for_scores(self.q_proj(x))
        key_layer = self.transpose_for_scores(self.k_proj(x))
        value_layer = self.transpose_for_scores(self.v_proj(x))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            extended = (1.0 - attention_mask[:, None, None, :].to(attention_scores.dtype)) * torch.finfo(attention_scores.dtype).min
            attention_scores = attention_scores + extended
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        if is_causal:
            T = x.shape[1]
            attention_probs = attention_probs * torch.tril(torch.ones(T, T, device=x.device))
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return self.o_proj(context_layer.view(x.shape[0], x.shape[1], self.all_head_size))
