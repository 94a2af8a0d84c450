# attnprep: mqa
# expect: mask_leak
# diagnosis: masks_combined_or
"""Multi-query attention written as a "visibility grid": the padding row and the lower triangle are
prepared first, each as a bool grid of who-may-see-whom, then merged with `torch.logical_or` into one
grid before a single masked_fill. Either grid alone is right; merged with a logical or, a key is
visible when either grid allows it, so future real keys and past padded keys both leak."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_q_heads = num_heads
        self.width = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.width)
        self.v_proj = nn.Linear(d_model, self.width)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        n_batch, n_tok, d_model = x.shape
        q = self.q_proj(x).unflatten(-1, (self.n_q_heads, self.width)).permute(0, 2, 1, 3)
        k = self.k_proj(x).unsqueeze(1)  # (B, 1, T, D): the one shared key head
        v = self.v_proj(x).unsqueeze(1)
        logits = torch.matmul(q, k.mT) / math.sqrt(self.width)

        grids = []
        if attention_mask is not None:
            pad_grid = attention_mask.view(n_batch, 1, 1, n_tok)
            grids.append(pad_grid)
        if is_causal:
            tri_grid = torch.ones(n_tok, n_tok, dtype=torch.bool, device=x.device).tril()
            grids.append(tri_grid)

        if len(grids) == 2:
            visible = torch.logical_or(grids[0], grids[1])
        elif grids:
            visible = grids[0]
        else:
            visible = None
        if visible is not None:
            logits = logits.masked_fill(~visible, float("-inf"))

        weights = self.drop(torch.softmax(logits, dim=-1))
        mixed = torch.matmul(weights, v).permute(0, 2, 1, 3).flatten(2)
        return self.o_proj(mixed)
# bug-line: 42
