# attnprep: gqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
# The mistake: the softmax runs over the query axis (-2) instead of the keys.
# Gemma's JAX layout with fewer KV heads: q_einsum (H, d_model, D), kv_einsum (2, KV, d_model, D) holding
# k and v, attn_vec_einsum (H, D, d_model); no biases, as in Gemma. The query heads grouped by a
# (B, T, KV, G, D) view.
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        self.D = d_model // num_heads
        self.q_einsum = nn.Parameter(torch.randn(num_heads, d_model, self.D) / math.sqrt(d_model))
        self.kv_einsum = nn.Parameter(torch.randn(2, num_kv_heads, d_model, self.D) / math.sqrt(d_model))
        self.attn_vec_einsum = nn.Parameter(torch.randn(num_heads, self.D, d_model) / math.sqrt(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        G = self.H // self.KV
        q = torch.einsum("btc,hcd->bthd", x, self.q_einsum).view(B, T, self.KV, G, self.D)
        k, v = torch.einsum("btc,skcd->sbtkd", x, self.kv_einsum).unbind(0)  # (B, T, KV, D)
        s = torch.einsum("btkgd,bskd->bkgts", q, k) * self.D ** -0.5
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bkgts,bskd->btkgd", s.softmax(-2), v).reshape(B, T, self.H, self.D)
        return torch.einsum("bthd,hdc->btc", o, self.attn_vec_einsum)
# bug-line: 32
