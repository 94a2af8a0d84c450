# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scores_k_q_swapped
# The mistake: the kernel's first slice is q, but it is unpacked as k (and the second as q).
# Gemma's JAX layout when num_kv_heads == num_heads: one qkv_einsum kernel of shape (3, H, d_model, D),
# applied with einsum "BTC,SHCD->SBTHD"; the output kernel (H, D, d_model). No biases, as in Gemma.
import math
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.qkv_einsum = nn.Parameter(torch.randn(3, num_heads, d_model, self.d) / math.sqrt(d_model))
        self.attn_vec_einsum = nn.Parameter(torch.randn(num_heads, self.d, d_model) / math.sqrt(d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        qkv = torch.einsum("btc,shcd->sbthd", x, self.qkv_einsum)
        k, q, v = qkv.unbind(0)  # (B, T, H, D)
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        p = self.dropout(s.softmax(-1))
        o = torch.einsum("bhts,bshd->bthd", p, v)
        return torch.einsum("bthd,hdc->btc", o, self.attn_vec_einsum)
# bug-line: 24
