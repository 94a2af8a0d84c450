# attnprep: cross_attention
# expect: error
# diagnosis: cross_kv_from_x
"""Slovenské komentáre (Slovak comments and names: dopyt, kluce, hodnoty, zdroj, maska); the key /
value projection in a helper whose source argument defaults to the queries' input, and the caller
never passes the context."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.hlavy = num_heads  # pocet hlav
        self.velkost = d_model // num_heads  # velkost hlavy
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.vypadok = nn.Dropout(dropout)

    def _hlavy(self, t):
        B, N, _ = t.shape
        return t.view(B, N, self.hlavy, self.velkost).transpose(1, 2)

    def _kluce_hodnoty(self, x, zdroj=None):
        # zdroj klucov a hodnot: predvolene vstup dopytov
        zdroj = x if zdroj is None else zdroj
        return self._hlavy(self.k_proj(zdroj)), self._hlavy(self.v_proj(zdroj))

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        dopyt = self._hlavy(self.q_proj(x))
        kluce, hodnoty = self._kluce_hodnoty(x)  # kluce a hodnoty
        skore = dopyt @ kluce.transpose(-2, -1) / math.sqrt(self.velkost)
        if context_mask is not None:
            skore = skore.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        vahy = self.vypadok(skore.softmax(dim=-1))
        vystup = (vahy @ hodnoty).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(vystup)
# bug-line: 37
