# attnprep: mha
# expect: passed
"""Correct: layers made on the meta device (`with torch.device("meta")`, the big-model habit), then
materialised with to_empty(device="cpu") and reset_parameters(); the scale a 0-d tensor attribute."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        with torch.device("meta"):
            self.q_proj = nn.Linear(d_model, d_model)
            self.k_proj = nn.Linear(d_model, d_model)
            self.v_proj = nn.Linear(d_model, d_model)
            self.o_proj = nn.Linear(d_model, d_model)
        self.to_empty(device="cpu")
        for m in (self.q_proj, self.k_proj, self.v_proj, self.o_proj):
            m.reset_parameters()
        self.scale = torch.tensor((d_model // num_heads) ** -0.5)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (l(x).view(B, T, self.h, -1).transpose(1, 2) for l in (self.q_proj, self.k_proj, self.v_proj))
        s = (q @ k.transpose(-2, -1)) * self.scale
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        return self.o_proj((self.drop(s.softmax(-1)) @ v).transpose(1, 2).reshape(B, T, C))
