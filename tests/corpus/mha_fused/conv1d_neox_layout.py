# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Buggy: the fused channels split as (H, 3, D) (GPT-NeoX) where the contract is [q; k; v]. Otherwise correct: Fused qkv as nn.Conv1d(d, 3d, 1) over channels-first (B, C, T) (the 1x1-conv habit of vision /
speech code); output projection a Conv1d too."""
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Conv1d(d_model, 3 * d_model, 1)
        self.proj_out = nn.Conv1d(d_model, d_model, 1)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        qkv = self.qkv(x.transpose(1, 2))  # (B, 3C, T)
        q, k, v = qkv.reshape(B, self.h, 3, D, T).unbind(2)  # each (B, H, D, T)
        w = torch.einsum("bhdt,bhds->bhts", q, k) / math.sqrt(D)
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            w = w.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        w = w.softmax(-1)
        o = torch.einsum("bhts,bhds->bhdt", w, v).reshape(B, C, T)
        return self.proj_out(o).transpose(1, 2)
# bug-line: 22
