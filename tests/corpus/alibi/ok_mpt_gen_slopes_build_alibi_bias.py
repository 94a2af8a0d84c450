# attnprep: alibi
# expect: passed
"""MosaicML MPT's ALiBi: gen_slopes with alibi_bias_max=8 over the next power of two and the
`concat([slopes[1::2], slopes[::2]])[:n_heads]` interleave, build_alibi_bias as
arange(1 - seq_len, 1) (the key's distance to the LAST query, a per-row constant away from i - j,
which the softmax ignores), the causal mask from MPT's `_apply_sequence_id`-free path."""
import math

import torch


def gen_slopes(n_heads, alibi_bias_max=8, device=None):
    _n_heads = 2 ** math.ceil(math.log2(n_heads))
    m = torch.arange(1, _n_heads + 1, dtype=torch.float32, device=device)
    m = m.mul(alibi_bias_max / _n_heads)
    slopes = 1.0 / torch.pow(2, m)
    if _n_heads != n_heads:
        slopes = torch.concat([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes


def alibi_slopes(num_heads):
    return gen_slopes(num_heads)


def build_alibi_bias(n_heads, seq_len, device=None, dtype=torch.float32):
    alibi_bias = torch.arange(1 - seq_len, 1, dtype=torch.int32, device=device).view(1, 1, 1, seq_len)
    slopes = gen_slopes(n_heads, device=device)
    return (alibi_bias * slopes.view(1, n_heads, 1, 1)).to(dtype)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    softmax_scale = 1 / math.sqrt(D)
    attn_weight = q.matmul(k.transpose(-1, -2)) * softmax_scale
    attn_weight = attn_weight + build_alibi_bias(H, T, device=q.device, dtype=q.dtype)
    min_val = torch.finfo(q.dtype).min
    if attention_mask is not None:
        attn_weight = attn_weight.masked_fill(~attention_mask.view(B, 1, 1, T), min_val)
    causal_mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril().logical_not()
    attn_weight = attn_weight.masked_fill(causal_mask.view(1, 1, T, T), min_val)
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight.matmul(v)
