# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout + merge_heads_no_transpose
"""An Objective-C programmer's selector names (projectQKV_withBatch_length_, one underscore per
keyword part) and _ivar-style fields; the fused output viewed (B, T, H, 3, D), as if each head kept
its own q, k, v, and the heads merged by a reshape straight from (B, H, T, D)."""
import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self._numHeads = num_heads
        self._headDim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def projectQKV_withBatch_length_(self, x, B, T):
        fused = self.qkv_proj(x)
        heads = fused.view(B, T, self._numHeads, 3, self._headDim)
        q, k, v = heads.unbind(dim=3)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def scoresForQuery_key_(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self._headDim)

    def maskScores_withPadding_causal_(self, s, pad, causal):
        if pad is not None:
            s = s.masked_fill(~pad[:, None, None, :], float("-inf"))
        if causal:
            T = s.size(-1)
            s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=s.device).tril(), float("-inf"))
        return s

    def mergeHeads_withBatch_length_(self, y, B, T):
        return y.reshape(B, T, self._numHeads * self._headDim)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q, k, v = self.projectQKV_withBatch_length_(x, B, T)
        s = self.maskScores_withPadding_causal_(self.scoresForQuery_key_(q, k), attention_mask, is_causal)
        y = torch.softmax(s, dim=-1) @ v
        return self.o_proj(self.mergeHeads_withBatch_length_(y, B, T))
# bug-line: 23, 39
