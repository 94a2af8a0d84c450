# attnprep: mha
# expect: wrong_output
# diagnosis: merge_heads_no_transpose
"""Buggy: the heads merged by reshape without the transpose back. Otherwise correct: nn.MultiheadAttention's layout when _qkv_same_embed_dim is False, written by hand:
q_proj_weight, k_proj_weight, v_proj_weight, one in_proj_bias (3·d), out_proj a Linear."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class NonDynamicallyQuantizableLinear(nn.Linear):
    pass


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.q_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.k_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.v_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.register_parameter("in_proj_weight", None)
        self.in_proj_bias = nn.Parameter(torch.empty(3 * d_model))
        self.out_proj = NonDynamicallyQuantizableLinear(d_model, d_model)
        self.dropout = dropout
        self._reset_parameters()

    def _reset_parameters(self):
        nn.init.xavier_uniform_(self.q_proj_weight)
        nn.init.xavier_uniform_(self.k_proj_weight)
        nn.init.xavier_uniform_(self.v_proj_weight)
        nn.init.constant_(self.in_proj_bias, 0.0)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, E = x.shape
        bq, bk, bv = self.in_proj_bias.chunk(3)
        q = F.linear(x, self.q_proj_weight, bq)
        k = F.linear(x, self.k_proj_weight, bk)
        v = F.linear(x, self.v_proj_weight, bv)
        q, k, v = (t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        q = q * (self.head_dim ** -0.5)
        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        a = torch.baddbmm(bias.expand(B, self.num_heads, T, T).reshape(-1, T, T),
                          q.reshape(-1, T, self.head_dim), k.reshape(-1, T, self.head_dim).transpose(1, 2))
        a = F.dropout(a.softmax(-1), p=self.dropout, training=self.training)
        o = torch.bmm(a, v.reshape(-1, T, self.head_dim)).view(B, self.num_heads, T, self.head_dim)
        return self.out_proj(o.reshape(B, T, E))
# bug-line: 54
