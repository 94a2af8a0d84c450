# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""Magyar megjegyzések (Hungarian comments and names: fejek, kulcs, ertek, lepteke, pontszam); the
scale declared 1.0 in __init__ and worked out in a reset_scale() method the constructor calls, from
the model width rather than the head size."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.szelesseg = d_model  # modell szélessége
        self.fejek = num_heads
        self.fej_meret = d_model // num_heads
        self.lepteke = 1.0  # a pontszámok léptéke, lent számolva
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.ejtes = nn.Dropout(dropout)
        self.reset_scale()

    def reset_scale(self):
        self.lepteke = 1.0 / math.sqrt(self.szelesseg)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.fejek, self.fej_meret).transpose(1, 2)
        kulcs = self.k_proj(x).view(B, T, self.fejek, self.fej_meret).transpose(1, 2)
        ertek = self.v_proj(x).view(B, T, self.fejek, self.fej_meret).transpose(1, 2)
        pontszam = torch.matmul(q, kulcs.transpose(-2, -1)) * self.lepteke
        if attention_mask is not None:
            pontszam = pontszam.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            jovo = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            pontszam = pontszam.masked_fill(jovo, float("-inf"))
        sulyok = self.ejtes(torch.softmax(pontszam, dim=-1))
        kimenet = torch.matmul(sulyok, ertek).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(kimenet)
# bug-line: 28
