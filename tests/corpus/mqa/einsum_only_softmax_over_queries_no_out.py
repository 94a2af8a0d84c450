# attnprep: mqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim + output_proj_skipped
"""Einsum everywhere: one shared key / value head broadcast by the subscripts, no view / transpose at all."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.hd)
        self.v_proj = nn.Linear(d_model, self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.q_proj(x).unflatten(-1, (self.h, self.hd))  # b t h d
        k = self.k_proj(x)  # b s d
        v = self.v_proj(x)  # b s d
        s = torch.einsum("bthd,bsd->bhts", q, k) * self.hd ** -0.5
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep.expand(B, 1, T, T)
        if attention_mask is not None:
            keep = keep & torch.einsum("bs,t->bts", attention_mask.float(), torch.ones(T, device=x.device)).bool()[:, None]
        s = s.masked_fill(~keep, float("-inf"))
        p = s.softmax(dim=-2)
        o = torch.einsum("bhts,bsd->bthd", p, v).flatten(-2)
        return o
# bug-line: 32, 34
