# attnprep: mqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Komen dalam Bahasa Melayu (Malay comments and names: kepala, kunci, nilai, topeng, skor); the
one key / value head broadcast by unsqueeze(1); the causal mask built with triu(0), so each token
is also hidden from itself."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.bil_kepala = num_heads  # bilangan kepala
        self.saiz_kepala = d_model // num_heads  # saiz setiap kepala
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.saiz_kepala)
        self.v_proj = nn.Linear(d_model, self.saiz_kepala)
        self.o_proj = nn.Linear(d_model, d_model)
        self.keciciran = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        soalan = self.q_proj(x).view(B, T, self.bil_kepala, self.saiz_kepala).transpose(1, 2)
        kunci = self.k_proj(x).unsqueeze(1)  # (B, 1, T, D) dikongsi semua kepala
        nilai = self.v_proj(x).unsqueeze(1)
        skor = soalan @ kunci.transpose(-2, -1) / math.sqrt(self.saiz_kepala)
        if attention_mask is not None:
            skor = skor.masked_fill(attention_mask[:, None, None, :] == False, float("-inf"))  # noqa: E712
        if is_causal:
            topeng = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(0)  # topeng masa depan
            skor = skor.masked_fill(topeng, float("-inf"))
        kebarangkalian = self.keciciran(torch.softmax(skor, dim=-1))
        hasil = (kebarangkalian @ nilai).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(hasil)
# bug-line: 33
