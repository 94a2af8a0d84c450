# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""Türkçe yorumlar (Turkish comments and names: dikkat, anahtar, sorgu, değer), the projections in
a nested ModuleDict reached by dotted paths with self.get_submodule("izdusum.sorgu"); the padding
mask put on the query rows."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.kafa = num_heads  # kafa sayısı
        self.boyut = d_model // num_heads  # her kafanın boyutu
        self.izdusum = nn.ModuleDict({  # izdüşümler
            "sorgu": nn.Linear(d_model, d_model),
            "anahtar": nn.Linear(d_model, d_model),
            "deger": nn.Linear(d_model, d_model),
            "cikis": nn.Linear(d_model, d_model),
        })
        self.birakma = nn.Dropout(dropout)

    def _bol(self, t):  # (B, T, C) -> (B, H, T, D)
        b, n, _ = t.shape
        return t.view(b, n, self.kafa, self.boyut).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, n, c = x.shape
        q = self._bol(self.get_submodule("izdusum.sorgu")(x))
        k = self._bol(self.get_submodule("izdusum.anahtar")(x))
        v = self._bol(self.get_submodule("izdusum.deger")(x))
        skor = q @ k.transpose(-2, -1) / math.sqrt(self.boyut)
        izin = torch.ones(n, n, dtype=torch.bool, device=x.device)  # izin verilen konumlar
        if is_causal:
            izin = izin.tril()
        if attention_mask is not None:
            izin = izin & attention_mask[:, None, :, None]  # dolgu maskesi
        skor = skor.masked_fill(~izin, float("-inf"))
        dikkat = self.birakma(torch.softmax(skor, dim=-1))  # dikkat ağırlıkları
        cikti = (dikkat @ v).transpose(1, 2).reshape(b, n, c)
        return self.get_submodule("izdusum.cikis")(cikti)
# bug-line: 40
