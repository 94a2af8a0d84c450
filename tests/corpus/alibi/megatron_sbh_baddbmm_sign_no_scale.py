# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_sign_flipped + missing_scale
"""Megatron-DeepSpeed's BLOOM path: [sq, b, np, hn] tensors, heads folded into the batch, the alibi
tensor passed to baddbmm as its input with beta=1. The bias is built as m·(i - j) and alpha left at 1."""
import math
import torch


def alibi_slopes(num_heads):
    def pow2_slopes(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(num_heads).is_integer():
        return torch.tensor(pow2_slopes(num_heads))
    closest = 2 ** math.floor(math.log2(num_heads))
    extra = pow2_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(pow2_slopes(closest) + extra)


def alibi_attention(q, k, v, attention_mask=None):
    b, np_, sq, hn = q.shape
    query_layer = q.permute(2, 0, 1, 3)  # [sq, b, np, hn]
    key_layer = k.permute(2, 0, 1, 3)  # [sk, b, np, hn]
    value_layer = v.permute(2, 0, 1, 3)
    pos = torch.arange(sq, device=q.device)
    rel = (pos[:, None] - pos[None, :]).to(q.dtype)  # i - j
    alibi = alibi_slopes(np_).to(q.device, q.dtype)[:, None, None] * rel  # [np, sq, sk]
    alibi = alibi.repeat(b, 1, 1)  # [b * np, sq, sk]
    q2 = query_layer.reshape(sq, b * np_, hn).transpose(0, 1)  # [b * np, sq, hn]
    k2 = key_layer.reshape(sq, b * np_, hn).permute(1, 2, 0)  # [b * np, hn, sk]
    matmul_result = torch.baddbmm(alibi, q2, k2, beta=1.0, alpha=1.0)
    attention_scores = matmul_result.view(b, np_, sq, sq)
    blocked = torch.ones(sq, sq, dtype=torch.bool, device=q.device).triu(1)
    if attention_mask is not None:
        blocked = blocked | ~attention_mask[:, None, None, :]
    attention_scores = attention_scores.masked_fill(blocked, -10000.0)
    probs = torch.softmax(attention_scores, dim=-1)
    v2 = value_layer.reshape(sq, b * np_, hn).transpose(0, 1)  # [b * np, sk, hn]
    ctx = torch.bmm(probs.view(b * np_, sq, sq), v2)  # [b * np, sq, hn]
    return ctx.view(b, np_, sq, hn)
# bug-line: 28, 32
