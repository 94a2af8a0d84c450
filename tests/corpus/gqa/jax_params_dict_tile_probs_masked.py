# attnprep: gqa
# expect: mask_leak
# diagnosis: gqa_heads_tiled + mask_after_softmax
"""JAX-ish: a pure gqa_apply(params, x, ...) over an explicit params dict; the module only owns the arrays."""
import math

import torch
import torch.nn as nn


def linear(p, x):
    return x @ p["kernel"].T + p["bias"]


def gqa_apply(params, x, *, num_heads, num_kv_heads, mask=None, causal=False):
    B, T, C = x.shape
    hd = C // num_heads
    q = linear(params["q_proj"], x).reshape(B, T, num_heads, hd)
    k = linear(params["k_proj"], x).reshape(B, T, num_kv_heads, hd)
    v = linear(params["v_proj"], x).reshape(B, T, num_kv_heads, hd)
    k = torch.tile(k, (1, 1, num_heads // num_kv_heads, 1))  # jnp.tile
    v = torch.tile(v, (1, 1, num_heads // num_kv_heads, 1))
    logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)
    ok = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
    if causal:
        ok = ok & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    if mask is not None:
        ok = ok & mask[:, None, None, :]
    weights = torch.softmax(logits, dim=-1)
    weights = torch.where(ok, weights, 0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, C)
    return linear(params["o_proj"], out)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model // num_heads * num_kv_heads)
        self.v_proj = nn.Linear(d_model, d_model // num_heads * num_kv_heads)
        self.o_proj = nn.Linear(d_model, d_model)

    def params(self):
        return {name: {"kernel": m.weight, "bias": m.bias}
                for name, m in self.named_children() if isinstance(m, nn.Linear)}

    def forward(self, x, attention_mask=None, is_causal=False):
        return gqa_apply(self.params(), x, num_heads=self.num_heads, num_kv_heads=self.num_kv_heads,
                         mask=attention_mask, causal=is_causal)
# bug-line: 21, 22, 29, 30
