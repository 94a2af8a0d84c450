# attnprep: mha
# expect: error
# diagnosis: tensor_without_device
"""The causal table on torch.device("cuda" if torch.cuda.is_available() else "cpu"): not the input's
device (on a GPU machine a CPU input, attnprep's default --device cpu, meets a CUDA mask)."""
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
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if is_causal:
            tri = torch.ones(T, T, dtype=torch.bool, device=dev).tril()
            s = s.masked_fill(~tri, float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        p = self.drop(s.softmax(-1))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
