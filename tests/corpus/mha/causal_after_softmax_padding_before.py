# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Mistral-style attention: the padding mask is added before the softmax, but the causal mask is applied to the probabilities afterwards (rows no longer sum to 1)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores + torch.where(attention_mask[:, None, None, :], 0.0, float("-inf"))
        probs = F.softmax(scores.float(), dim=-1).type_as(xq)
        if is_causal:
            probs = probs * torch.tril(torch.ones(seqlen, seqlen, device=x.device))
        out = torch.matmul(probs, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)
