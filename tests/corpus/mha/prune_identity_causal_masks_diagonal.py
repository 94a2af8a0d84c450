# attnprep: mha
# expect: wrong_output
# diagnosis: causal_masks_diagonal
# The mistake: triu(0) masks the diagonal too, each query loses itself (and the first row is all masked).
# torch.nn.utils.prune.identity on every projection (a pruning workflow before any mask is learned):
# weight_orig is the parameter, weight_mask a buffer of ones, weight recomputed by a pre-hook.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import prune


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.o_proj):
            prune.identity(lin, "weight")
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(0), float("-inf"))
        p = self.drop(s.softmax(-1))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 36
