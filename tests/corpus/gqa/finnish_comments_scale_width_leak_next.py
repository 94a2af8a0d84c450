# attnprep: gqa
# expect: mask_leak
# diagnosis: scale_d_model + causal_leaks_next
"""Suomenkieliset kommentit (Finnish comments and names: avaimet, arvot, kyselyt, ryhmä), the KV
heads grouped with torch.repeat_interleave; the scores divided by sqrt(d_model), and the causal
band one key too wide (triu(diagonal=2))."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.leveys = d_model  # mallin leveys
        self.paat = num_heads  # kyselypäät
        self.kv_paat = num_kv_heads  # avain- ja arvopäät
        self.paan_koko = d_model // num_heads
        self.kyselyt = nn.Linear(d_model, d_model)
        self.avaimet = nn.Linear(d_model, num_kv_heads * self.paan_koko)
        self.arvot = nn.Linear(d_model, num_kv_heads * self.paan_koko)
        self.ulos = nn.Linear(d_model, d_model)
        self.pudotus = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        ryhma = self.paat // self.kv_paat  # montako kyselypäätä jakaa yhden avainpään
        q = self.kyselyt(x).unflatten(-1, (self.paat, self.paan_koko)).transpose(1, 2)
        k = self.avaimet(x).unflatten(-1, (self.kv_paat, self.paan_koko)).transpose(1, 2)
        v = self.arvot(x).unflatten(-1, (self.kv_paat, self.paan_koko)).transpose(1, 2)
        k = torch.repeat_interleave(k, ryhma, dim=1)
        v = torch.repeat_interleave(v, ryhma, dim=1)
        pisteet = q @ k.transpose(-2, -1) / math.sqrt(self.leveys)
        if attention_mask is not None:
            pisteet = pisteet.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            tulevat = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=2)
            pisteet = pisteet.masked_fill(tulevat, float("-inf"))
        painot = self.pudotus(F.softmax(pisteet, dim=-1))
        tulos = (painot @ v).transpose(1, 2).flatten(2)
        return self.ulos(tulos)
# bug-line: 35, 39
