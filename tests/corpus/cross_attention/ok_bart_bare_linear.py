# attnprep: cross_attention
# expect: passed
"""BART-like (scaling folded into the query, (B * H, T, D) bmm), bare weight and bias parameters used
through F.linear: correct."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = dropout
        for name, fan_in in (("q_proj", d_model), ("k_proj", d_context), ("v_proj", d_context), ("o_proj", d_model)):
            setattr(self, name + "_weight", nn.Parameter(torch.randn(d_model, fan_in) / fan_in**0.5))
            setattr(self, name + "_bias", nn.Parameter(torch.zeros(d_model)))

    def _shape(self, t: torch.Tensor, bsz: int) -> torch.Tensor:
        return t.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2).reshape(bsz * self.num_heads, -1, self.head_dim)

    def forward(self, x, context, context_mask=None):
        bsz, tgt_len, embed_dim = x.size()
        q = F.linear(x, self.q_proj_weight, self.q_proj_bias) * self.scaling
        k = F.linear(context, self.k_proj_weight, self.k_proj_bias)
        v = F.linear(context, self.v_proj_weight, self.v_proj_bias)
        q, k, v = self._shape(q, bsz), self._shape(k, bsz), self._shape(v, bsz)
        attn_weights = torch.bmm(q, k.transpose(1, 2))  # (B * H, T, S)
        if context_mask is not None:
            src_len = k.size(1)
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(~context_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_probs = F.dropout(F.softmax(attn_weights, dim=-1), p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, v).view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        return F.linear(attn_output, self.o_proj_weight, self.o_proj_bias)
