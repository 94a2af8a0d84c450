# attnprep: mha
# expect: passed
"""A Swift programmer's habits: `guard`-style early checks at the top of every helper (each one
either returns early or raises), `let`-like constants bound once and never rebound, optional
values unwrapped by hand (`if let mask = attention_mask`), and argument labels kept as keywords."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        # guard d_model % num_heads == 0 else { fatalError }
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.numHeads = num_heads
        self.headDim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def splitHeads(self, tensor, *, batch, length):
        # guard tensor.dim() == 3 else { return tensor }
        if tensor.dim() != 3:
            return tensor
        return tensor.reshape(batch, length, self.numHeads, self.headDim).transpose(1, 2)

    def applyMask(self, scores, *, mask, isCausal):
        result = scores
        # if let mask = mask { ... }
        if mask is not None:
            let_keep = mask.bool()[:, None, None, :]
            result = result.masked_fill(let_keep.logical_not(), float("-inf"))
        # guard isCausal else { return result }
        if not isCausal:
            return result
        let_length = scores.shape[-1]
        let_future = torch.ones(let_length, let_length, dtype=torch.bool, device=scores.device).triu(1)
        return result.masked_fill(let_future, float("-inf"))

    def forward(self, x, attention_mask=None, is_causal=False):
        let_batch, let_length, let_width = x.shape
        let_q = self.splitHeads(self.q_proj(x), batch=let_batch, length=let_length)
        let_k = self.splitHeads(self.k_proj(x), batch=let_batch, length=let_length)
        let_v = self.splitHeads(self.v_proj(x), batch=let_batch, length=let_length)
        let_scores = let_q.matmul(let_k.transpose(-1, -2)) * (1.0 / math.sqrt(self.headDim))
        let_masked = self.applyMask(let_scores, mask=attention_mask, isCausal=is_causal)
        let_probs = self.dropout(let_masked.softmax(dim=-1))
        let_context = let_probs.matmul(let_v).transpose(1, 2).reshape(let_batch, let_length, let_width)
        return self.o_proj(let_context)
