# attnprep: mha
# expect: mask_leak
# diagnosis: scale_d_model + padding_mask_on_queries
"""Defaults kept as typing.ClassVar on the class (shared by every instance), helpers named and
commented in Spanish, an additive -1e9 fill."""
import math
from typing import ClassVar

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    # valores por defecto de la clase, compartidos por todas las instancias
    NEG: ClassVar[float] = -1e9
    USAR_SESGO: ClassVar[bool] = True

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model debe ser divisible por num_heads"
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=self.USAR_SESGO)
        self.k_proj = nn.Linear(d_model, d_model, bias=self.USAR_SESGO)
        self.v_proj = nn.Linear(d_model, d_model, bias=self.USAR_SESGO)
        self.o_proj = nn.Linear(d_model, d_model, bias=self.USAR_SESGO)
        self.abandono = nn.Dropout(dropout)

    def _escala(self):
        # factor de escala de los productos escalares
        return 1.0 / math.sqrt(self.d_model)

    def _cabezas(self, t, B, T):
        # (B, T, d_model) -> (B, H, T, D)
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self._cabezas(self.q_proj(x), B, T)
        k = self._cabezas(self.k_proj(x), B, T)
        v = self._cabezas(self.v_proj(x), B, T)
        puntuaciones = torch.matmul(q, k.transpose(-2, -1)) * self._escala()  # (B, H, T, T)
        if is_causal:
            futuro = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            puntuaciones = puntuaciones.masked_fill(futuro, self.NEG)
        if attention_mask is not None:
            # las posiciones de relleno no reciben atención
            relleno = ~attention_mask[:, None, :, None]
            puntuaciones = puntuaciones.masked_fill(relleno, self.NEG)
        pesos = self.abandono(torch.softmax(puntuaciones, dim=-1))
        salida = (pesos @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.o_proj(salida)
# bug-line: 32, 49
