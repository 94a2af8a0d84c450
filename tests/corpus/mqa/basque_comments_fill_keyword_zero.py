# attnprep: mqa
# expect: mask_leak
# diagnosis: mask_fill_zero
"""Euskarazko iruzkinak (Basque comments and names: buruak, gakoa, balioa, maskara, betegarria);
the masking done by a helper whose fill defaults to -inf, and the forward's one call hands it
fill=0.0 of its own."""
import math

import torch
import torch.nn as nn


def maskaratu(puntuak, blokeatuak, betegarria=float("-inf")):
    # blokeatutako posizioak bete
    return puntuak.masked_fill(blokeatuak, betegarria)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.buruak = num_heads  # buru kopurua
        self.buru_tamaina = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.buru_tamaina)
        self.v_proj = nn.Linear(d_model, self.buru_tamaina)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.buruak, self.buru_tamaina).transpose(1, 2)
        gakoa = self.k_proj(x)[:, None]  # (B, 1, T, D)
        balioa = self.v_proj(x)[:, None]
        puntuak = q @ gakoa.transpose(-2, -1) / math.sqrt(self.buru_tamaina)
        blokeatuak = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blokeatuak = blokeatuak | ~attention_mask[:, None, None, :]
        if is_causal:
            blokeatuak = blokeatuak | torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        puntuak = maskaratu(puntuak, blokeatuak, betegarria=0.0)  # maskara
        pisuak = self.dropout(puntuak.softmax(dim=-1))
        irteera = (pisuak @ balioa).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(irteera)
# bug-line: 40
