# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted + output_proj_skipped
"""Sylwadau Cymraeg (Welsh comments and names: ymholiad, allwedd, gwerth, pennau, mwgwd); the
padding positions found with `== 0` of the bool mask and then negated once more at the fill, and the merged heads returned without
the output projection (allbwn kept in __init__ but never called)."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.pennau = num_heads  # nifer y pennau
        self.maint_pen = d_model // num_heads  # maint pob pen
        self.ymholiad = nn.Linear(d_model, d_model)
        self.allwedd = nn.Linear(d_model, d_model)
        self.gwerth = nn.Linear(d_model, d_model)
        self.allbwn = nn.Linear(d_model, d_model)
        self.gollwng = nn.Dropout(dropout)

    def _hollti(self, t):
        # hollti'r pennau: (B, T, C) -> (B, H, T, D)
        B, T, _ = t.shape
        return t.view(B, T, self.pennau, self.maint_pen).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self._hollti(self.ymholiad(x))
        k = self._hollti(self.allwedd(x))
        v = self._hollti(self.gwerth(x))
        sgoriau = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.maint_pen)
        if attention_mask is not None:
            mwgwd = (attention_mask == 0)[:, None, None, :]  # mwgwd y padin
            sgoriau = sgoriau.masked_fill(~mwgwd, float("-inf"))
        if is_causal:
            dyfodol = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            sgoriau = sgoriau.masked_fill(dyfodol, float("-inf"))
        pwysau = self.gollwng(sgoriau.softmax(dim=-1))
        cyfun = torch.einsum("bhqk,bhkd->bhqd", pwysau, v)
        cyfun = cyfun.permute(0, 2, 1, 3).reshape(B, T, C)
        return cyfun  # yr allbwn
# bug-line: 37, 44
