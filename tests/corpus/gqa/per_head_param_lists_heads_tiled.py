# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""Buggy: query head h reads kv head h % num_kv_heads (tiled, not grouped); per-head kernels in nn.ParameterList, stored (d_model, head_dim) and used as x @ W (a JAX
port's layout), their biases in sibling lists b_q / b_k / b_v; query head h reads kv head h // group."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        d = d_model // num_heads
        mats = lambda n: nn.ParameterList([nn.Parameter(torch.randn(d_model, d) / math.sqrt(d_model)) for _ in range(n)])  # noqa: E731
        vecs = lambda n: nn.ParameterList([nn.Parameter(torch.zeros(d)) for _ in range(n)])  # noqa: E731
        self.W_q, self.b_q = mats(num_heads), vecs(num_heads)
        self.W_k, self.b_k = mats(num_kv_heads), vecs(num_kv_heads)
        self.W_v, self.b_v = mats(num_kv_heads), vecs(num_kv_heads)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep.expand(B, T, T)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        ks = [x @ self.W_k[g] + self.b_k[g] for g in range(self.KV)]
        vs = [x @ self.W_v[g] + self.b_v[g] for g in range(self.KV)]
        group = self.H // self.KV
        outs = []
        for h in range(self.H):
            q = x @ self.W_q[h] + self.b_q[h]
            s = q @ ks[h % self.KV].transpose(1, 2) / math.sqrt(q.shape[-1])
            outs.append(s.masked_fill(~keep, float("-inf")).softmax(-1) @ vs[h % self.KV])
        return self.o_proj(torch.cat(outs, -1))
# bug-line: 37, 38
