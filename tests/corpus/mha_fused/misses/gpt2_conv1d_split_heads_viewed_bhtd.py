# attnprep: mha_fused
# expect: error
# diagnosis: split_heads_no_transpose
"""Hugging Face modeling_gpt2 habits: Conv1D (weight stored (nx, nf), x @ W + b), c_attn / c_proj,
_split_heads / _merge_heads helpers, split(self.split_size, dim=2)."""
import math

import torch
import torch.nn as nn


class Conv1D(nn.Module):
    """GPT-2's 1-D 'convolution': a linear layer whose weight is stored transposed (nx, nf)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.split_size = d_model
        self.c_attn = Conv1D(3 * d_model, d_model)
        self.c_proj = Conv1D(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-2] + (num_heads, tensor.size(-2), attn_head_size)
        return tensor.view(new_shape)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask=None, is_causal=False):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                                 device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        mask_value = torch.finfo(attn_weights.dtype).min
        if is_causal:
            causal_mask = torch.tril(torch.ones((query_length, key_length), dtype=torch.bool,
                                                device=query.device))
            attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, x, attention_mask=None, is_causal=False):
        query, key, value = self.c_attn(x).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output, attn_weights = self._attn(query, key, value, attention_mask, is_causal)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        return self.c_proj(attn_output), attn_weights
# bug-line: 40, 41
