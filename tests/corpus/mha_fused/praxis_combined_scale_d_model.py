# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scale_d_model
# The mistake: the scores are divided by sqrt(d_model) instead of sqrt(head_dim).
# Praxis / Pax's CombinedQKVProjectionLayer: w of shape (3, d_model, H, D) and b of (3, H, D), applied
# with einsum "BTD,KDNH->KBTNH"; the output projection w (d_model, H, D) used as "BTNH,DNH->BTD".
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.combined_qkv = nn.Module()
        self.combined_qkv.w = nn.Parameter(torch.randn(3, d_model, num_heads, self.d) / math.sqrt(d_model))
        self.combined_qkv.b = nn.Parameter(torch.zeros(3, num_heads, self.d))
        self.post = nn.Module()
        self.post.w = nn.Parameter(torch.randn(d_model, num_heads, self.d) / math.sqrt(d_model))
        self.post.b = nn.Parameter(torch.zeros(d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = torch.einsum("btd,kdnh->kbtnh", x, self.combined_qkv.w) + self.combined_qkv.b[:, None, None]
        q, k, v = qkv.unbind(0)
        s = torch.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(C)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bnts,bsnh->btnh", self.dropout(s.softmax(-1)), v)
        return torch.einsum("btnh,dnh->btd", o, self.post.w) + self.post.b
# bug-line: 28
