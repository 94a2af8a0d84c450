# attnprep: mqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""heads folded into the query rows; the softmax runs over the heads axis of (B, T, H, S)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.d)
        self.v_proj = nn.Linear(d_model, self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T * self.h, self.d)             # row t*H + h
        k, v = self.k_proj(x), self.v_proj(x)                          # (B, T, D)
        s = torch.bmm(q, k.transpose(1, 2)) * self.d ** -0.5           # (B, T*H, T)
        s = s.view(B, T, self.h, T)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            tri = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            s = s.masked_fill(~tri[:, None, :], -1e9)
        p = F.softmax(s, dim=-2).view(B, T * self.h, T)
        y = torch.bmm(p, v).view(B, T, C)
        return self.o_proj(y)
# bug-line: 31
