# attnprep: mha
# expect: mask_leak
# diagnosis: causal_flag_inverted
"""Returns (out, weights); the causal mask is applied when is_causal is False and skipped when it is True."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    """Returns (output, attention weights), like many HF modules."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.head_size = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seq_len, d_model = x.shape

        def heads(t):
            return t.reshape(bsz, seq_len, self.n_heads, self.head_size).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_size)

        neg = torch.finfo(x.dtype).min
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], neg)
        if not is_causal:
            i = torch.arange(seq_len, device=x.device)
            scores = scores.masked_fill(i[None, :] > i[:, None], neg)

        weights = self.dropout(self.softmax(scores))
        ctx = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(bsz, seq_len, d_model)
        return self.out(ctx), weights
