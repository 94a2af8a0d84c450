# attnprep: mha
# expect: passed
# Eager-mode quantization scaffolding left in (QuantStub / DeQuantStub are identities until convert),
# and FloatFunctional-style adds done by plain ops.
import math
import torch
import torch.nn as nn
from torch.ao.quantization import QuantStub, DeQuantStub


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.quant = QuantStub()
        self.dequant = DeQuantStub()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.num_heads = num_heads
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        x = self.quant(x)
        B, T, C = x.shape
        H, D = self.num_heads, C // self.num_heads
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)).div(math.sqrt(D))
        if attention_mask is not None:
            scores.masked_fill_(~attention_mask.view(B, 1, 1, T), float("-inf"))
        if is_causal:
            scores.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=x.device).triu_(1), float("-inf"))
        p = self.dropout(scores.softmax(-1))
        out = self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(B, T, C))
        return self.dequant(out)
