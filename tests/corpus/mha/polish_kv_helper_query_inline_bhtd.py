# attnprep: mha
# expect: wrong_output
# diagnosis: split_heads_no_transpose
"""Polish names and comments; the keys and values split into heads by a helper (rozdziel), the query
split inline with its own view."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.glowy = num_heads
        self.wymiar = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.porzucenie = nn.Dropout(dropout)

    def rozdziel(self, t):
        # (B, T, C) -> (B, H, T, D): podział na głowy
        B, T, _ = t.shape
        return t.view(B, T, self.glowy, self.wymiar).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        zapytania = self.q_proj(x).view(B, self.glowy, T, self.wymiar)
        klucze = self.rozdziel(self.k_proj(x))
        wartosci = self.rozdziel(self.v_proj(x))
        wyniki = zapytania @ klucze.transpose(-2, -1) / math.sqrt(self.wymiar)
        if is_causal:
            przyszlosc = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            wyniki = wyniki.masked_fill(przyszlosc, float("-inf"))
        if attention_mask is not None:
            wyniki = wyniki.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        wagi = self.porzucenie(torch.softmax(wyniki, dim=-1))
        wyjscie = (wagi @ wartosci).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(wyjscie)
# bug-line: 30
