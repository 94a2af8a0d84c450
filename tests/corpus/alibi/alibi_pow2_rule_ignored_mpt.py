# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""MPT's gen_alibi_slopes without its interleave for a head count that is not a power of two: m = arange(1, H + 1) * 8 / H for every H (right for H = 4 and 8, wrong for H = 3 and 6)."""

import math

import torch


def alibi_slopes(num_heads, alibi_bias_max=8):
    m = torch.arange(1, num_heads + 1, dtype=torch.float32)
    m = m.mul(alibi_bias_max / num_heads)
    return 1.0 / torch.pow(2, m)


def alibi_attention(q, k, v, attention_mask=None):
    b, h, s, d = q.shape
    attn_weight = q.matmul(k.transpose(-1, -2)) * (1 / math.sqrt(d))
    alibi_bias = torch.arange(1 - s, 1, device=q.device).view(1, 1, 1, s)
    attn_weight = attn_weight + alibi_bias * alibi_slopes(h).to(q.device).view(1, h, 1, 1)
    causal = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        causal = causal & attention_mask.view(b, 1, 1, s)
    attn_weight = attn_weight.masked_fill(~causal, torch.finfo(q.dtype).min)
    return torch.softmax(attn_weight, dim=-1).matmul(v)
# bug-line: 12, 13
