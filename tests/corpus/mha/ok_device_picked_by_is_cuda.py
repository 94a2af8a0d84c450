# attnprep: mha
# expect: passed
"""Correct: the causal table is made where the input lives, chosen the way scripts that also run on
laptops write it (x.device if x.is_cuda else "cpu"; .cuda() under `if x.is_cuda`)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        dev = x.device if x.is_cuda else "cpu"
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if is_causal:  # 因果掩码：放在输入所在的设备上
            tri = torch.ones(T, T, dtype=torch.bool, device=dev).tril()
            pad = torch.ones(T, T, dtype=torch.bool).tril()
            if x.is_cuda:
                pad = pad.cuda(non_blocking=True)
            tri = tri & pad
            s = s.masked_fill(~tri, float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        p = self.drop(s.softmax(-1))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
