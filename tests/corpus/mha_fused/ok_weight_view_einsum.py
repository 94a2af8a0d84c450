# attnprep: mha_fused
# expect: passed
"""Correct: qkv_proj's weight viewed (3, H, D, C) and contracted per head with einsum, its bias viewed (3, H, 1, D): the fused output is never split."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    """qkv_proj's weight read as (3, H, D, C) and contracted per head with einsum: no split of the output."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H, self.D = num_heads, d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        w = self.qkv_proj.weight.view(3, self.H, self.D, C)
        b = self.qkv_proj.bias.view(3, self.H, 1, self.D)
        q, k, v = (torch.einsum("btc,hdc->bhtd", x, w[i]) + b[i] for i in range(3))
        s = torch.einsum("bhtd,bhsd->bhts", q, k) * self.D ** -0.5
        if is_causal or attention_mask is not None:
            ok = torch.ones(T, T, dtype=torch.bool, device=x.device)
            if is_causal:
                ok = torch.tril(ok)
            ok = ok.expand(B, 1, T, T)
            if attention_mask is not None:
                ok = ok & attention_mask[:, None, None, :]
            s = torch.where(ok, s, -1e9)
        a = torch.nn.functional.dropout(s.softmax(-1), self.p, self.training)
        y = torch.einsum("bhts,bhsd->bthd", a, v).reshape(B, T, C)
        return self.o_proj(y)
