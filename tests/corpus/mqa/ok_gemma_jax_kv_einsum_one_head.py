# attnprep: mqa
# expect: passed
# Gemma-2B's multi-query layout: q_einsum (H, d_model, D), kv_einsum (2, 1, d_model, D),
# attn_vec_einsum (H, D, d_model); no biases, as in Gemma.
import math
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H, self.D = num_heads, d_model // num_heads
        self.q_einsum = nn.Parameter(torch.randn(num_heads, d_model, self.D) / math.sqrt(d_model))
        self.kv_einsum = nn.Parameter(torch.randn(2, 1, d_model, self.D) / math.sqrt(d_model))
        self.attn_vec_einsum = nn.Parameter(torch.randn(num_heads, self.D, d_model) / math.sqrt(d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = torch.einsum("btc,hcd->bhtd", x, self.q_einsum)
        k, v = torch.einsum("btc,skcd->sbktd", x, self.kv_einsum).unbind(0)  # (B, 1, T, D)
        s = q @ k.transpose(-1, -2) * self.D ** -0.5
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = self.dropout(s.softmax(-1)) @ v
        return torch.einsum("bhtd,hdc->btc", o, self.attn_vec_einsum)
