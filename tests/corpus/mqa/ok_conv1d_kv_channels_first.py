# attnprep: mqa
# expect: passed
"""Channels-first MQA: projections as nn.Conv1d(kernel_size=1) over (B, C, T)."""
import math
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_conv = nn.Conv1d(d_model, d_model, kernel_size=1)
        self.k_conv = nn.Conv1d(d_model, self.d, kernel_size=1)
        self.v_conv = nn.Conv1d(d_model, self.d, kernel_size=1)
        self.o_conv = nn.Conv1d(d_model, d_model, kernel_size=1)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        xc = x.transpose(1, 2)  # (B, C, T)
        q = self.q_conv(xc).view(B, self.h, self.d, T)  # (B, H, D, T)
        k = self.k_conv(xc)  # (B, D, T)
        v = self.v_conv(xc)  # (B, D, T)
        s = torch.einsum("bhdt,bds->bhts", q, k) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        p = s.softmax(-1)
        o = torch.einsum("bhts,bds->bhdt", p, v).reshape(B, C, T)
        return self.o_conv(o).transpose(1, 2)
