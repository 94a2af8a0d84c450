# attnprep: mha
# expect: mask_leak
# diagnosis: scale_d_model + padding_mask_inverted
"""Tensor-method style: heads folded into the batch, .bmm / .masked_fill_ / .softmax(-1) / .div_
chained on the tensors, masks expanded with .repeat_interleave over heads."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model, self.h = d_model, num_heads
        self.dh = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def _fold(self, t, B, T):
        return t.view(B, T, self.h, self.dh).transpose(1, 2).reshape(B * self.h, T, self.dh)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self._fold(self.q_proj(x), B, T)
        k = self._fold(self.k_proj(x), B, T)
        v = self._fold(self.v_proj(x), B, T)
        att = q.bmm(k.transpose(1, 2)).div_(self.d_model ** 0.5)          # (B*H, T, T)
        if is_causal:
            att.masked_fill_(x.new_ones(T, T, dtype=torch.bool).triu_(1), float("-inf"))
        if attention_mask is not None:
            pad = attention_mask.repeat_interleave(self.h, dim=0)[:, None, :]   # (B*H, 1, T)
            att.masked_fill_(pad, float("-inf"))
        att = self.drop(att.softmax(-1))
        y = att.bmm(v).view(B, self.h, T, self.dh).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 29, 34
