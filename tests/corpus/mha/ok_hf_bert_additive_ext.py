# attnprep: mha
# expect: passed
"""Correct, Hugging Face BERT style: transpose_for_scores helper, extended additive mask with finfo.min, own names."""

import math
from typing import Optional, Tuple

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"hidden size {d_model} not a multiple of heads {num_heads}")
        self.num_attention_heads = num_heads
        self.attention_head_size = d_model // num_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size

        self.query = nn.Linear(d_model, self.all_head_size)
        self.key = nn.Linear(d_model, self.all_head_size)
        self.value = nn.Linear(d_model, self.all_head_size)
        self.dense = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def transpose_for_scores(self, x: torch.Tensor) -> torch.Tensor:
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def get_extended_attention_mask(self, attention_mask, is_causal, seq_length, dtype):
        device = attention_mask.device if attention_mask is not None else None
        if attention_mask is None:
            ext = torch.ones(1, 1, 1, seq_length, device=device)
        else:
            ext = attention_mask[:, None, None, :].to(dtype)
        if is_causal:
            seq_ids = torch.arange(seq_length, device=ext.device)
            causal = (seq_ids[None, :] <= seq_ids[:, None]).to(dtype)  # (T, T)
            ext = ext * causal[None, None, :, :]
        return (1.0 - ext) * torch.finfo(dtype).min

    def forward(self, hidden_states: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                is_causal: bool = False) -> torch.Tensor:
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))

        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None or is_causal:
            ext = self.get_extended_attention_mask(attention_mask, is_causal, hidden_states.size(1), attention_scores.dtype)
            attention_scores = attention_scores + ext.to(attention_scores.device)

        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return self.dense(context_layer)
