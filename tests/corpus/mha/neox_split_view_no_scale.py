# attnprep: mha
# expect: wrong_output
# diagnosis: missing_scale + split_heads_no_transpose
"""GPT-NeoX layout (_split_heads / _merge_heads / _attn), two slips: _split_heads views (B, T, C) as
(B, H, T, D) straight away, and the scores are never scaled."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.head_size = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _split_heads(self, tensor):
        new_shape = (tensor.size(0), self.num_attention_heads, tensor.size(1), self.head_size)
        return tensor.view(new_shape)  # (B, H, T, D)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size(0), tensor.size(1), self.num_attention_heads * self.head_size)

    def _attn(self, query, key, value, attention_mask=None, is_causal=False):
        T = query.size(-2)
        attn_scores = torch.matmul(query, key.transpose(-1, -2))
        mask_value = torch.finfo(attn_scores.dtype).min
        if is_causal:
            causal = torch.tril(torch.ones((T, T), dtype=torch.bool, device=query.device)).view(1, 1, T, T)
            attn_scores = torch.where(causal, attn_scores, torch.tensor(mask_value, dtype=attn_scores.dtype, device=attn_scores.device))
        if attention_mask is not None:
            attn_scores = attn_scores.masked_fill(~attention_mask[:, None, None, :], mask_value)
        attn_weights = nn.functional.softmax(attn_scores, dim=-1)
        attn_weights = self.attention_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def forward(self, x, attention_mask=None, is_causal=False):
        query = self._split_heads(self.q_proj(x))
        key = self._split_heads(self.k_proj(x))
        value = self._split_heads(self.v_proj(x))
        attn_output = self._attn(query, key, value, attention_mask, is_causal)
        return self.o_proj(self._merge_heads(attn_output))
# bug-line: 24, 32
