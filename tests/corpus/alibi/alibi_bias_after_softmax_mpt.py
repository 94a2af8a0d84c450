# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_after_softmax
"""MPT style (gen_alibi_bias = slope·(j - (T - 1))), the bias added to the probabilities of the allowed
keys after the softmax instead of to the scores."""

import math

import torch


def gen_alibi_slopes(n_heads, alibi_bias_max=8, device=None):
    _n_heads = 2 ** math.ceil(math.log2(n_heads))
    m = torch.arange(1, _n_heads + 1, dtype=torch.float32, device=device)
    m = m.mul(alibi_bias_max / _n_heads)
    slopes = 1.0 / torch.pow(2, m)
    if _n_heads != n_heads:
        # the odd and even halves of 2n heads, as MPT interleaves them
        slopes = torch.concat([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes.view(1, n_heads, 1, 1)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    return gen_alibi_slopes(num_heads).view(num_heads)


def gen_alibi_bias(n_heads, seq_len, device=None, dtype=None):
    alibi_bias = torch.arange(1 - seq_len, 1, dtype=torch.int32, device=device).view(1, 1, 1, seq_len)
    slopes = gen_alibi_slopes(n_heads, device=device)
    alibi_bias = alibi_bias * slopes  # (1, H, 1, T)
    return alibi_bias.to(dtype=dtype)


def alibi_attention(q, k, v, attention_mask=None):
    b, n_heads, s_q, d = q.shape
    softmax_scale = 1 / math.sqrt(d)
    attn_weight = q.matmul(k.transpose(-1, -2)) * softmax_scale
    min_val = torch.finfo(q.dtype).min
    if attention_mask is not None:
        attn_weight = attn_weight.masked_fill(~attention_mask.view((b, 1, 1, s_q)), min_val)
    causal_mask = attn_weight.new_ones(s_q, s_q, dtype=torch.float32).tril().to(torch.bool)
    attn_weight = attn_weight.masked_fill(~causal_mask.view(1, 1, s_q, s_q), min_val)
    attn_weight = torch.softmax(attn_weight, dim=-1)
    allowed = causal_mask.view(1, 1, s_q, s_q) & (attention_mask.view(b, 1, 1, s_q) if attention_mask is not None else True)
    attn_weight = attn_weight + gen_alibi_bias(n_heads, s_q, device=q.device, dtype=q.dtype) * allowed
    return attn_weight.matmul(v)
# bug-line: 45
