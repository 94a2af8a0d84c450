# attnprep: gqa
# expect: mask_leak
# diagnosis: causal_ignored
"""Buggy: is_causal never applied; a Flax/T5X port of GQA: kernels kept in DenseGeneral shapes, query (d_model, H, D), key and
value (d_model, KV, D) with (KV, D) biases, output (H, D, d_model); the groups as a (B, T, KV, G, D)
query view scored in one einsum."""
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.H, self.KV, self.D = num_heads, num_kv_heads, d_model // num_heads
        init = lambda *s: nn.Parameter(torch.randn(*s) * 0.02)  # noqa: E731
        self.q_kernel, self.q_bias = init(d_model, num_heads, self.D), nn.Parameter(torch.zeros(num_heads, self.D))
        self.k_kernel, self.k_bias = init(d_model, num_kv_heads, self.D), nn.Parameter(torch.zeros(num_kv_heads, self.D))
        self.v_kernel, self.v_bias = init(d_model, num_kv_heads, self.D), nn.Parameter(torch.zeros(num_kv_heads, self.D))
        self.o_kernel, self.o_bias = init(num_heads, self.D, d_model), nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        G = self.H // self.KV
        q = (torch.einsum("btc,chd->bthd", x, self.q_kernel) + self.q_bias).view(B, T, self.KV, G, self.D)
        k = torch.einsum("btc,ckd->btkd", x, self.k_kernel) + self.k_bias
        v = torch.einsum("btc,ckd->btkd", x, self.v_kernel) + self.v_bias
        s = torch.einsum("bqkgd,bskd->bkgqs", q, k) / math.sqrt(self.D)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            pass
        keep = keep[None, None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        o = torch.einsum("bkgqs,bskd->bqkgd", s.softmax(-1), v).reshape(B, T, self.H, self.D)
        return torch.einsum("bthd,hdc->btc", o, self.o_kernel) + self.o_bias
# bug-line: 31
