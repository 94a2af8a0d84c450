# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_sign_flipped
"""ALiBi as FlexAttention writes it: a score_mod closure over the slope table, called on broadcast
(b, h, q_idx, kv_idx) index tensors, and a causal mask_mod; eager torch, no kernel."""
import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(num_heads).is_integer():
        s = pow2(num_heads)
    else:
        n = 2 ** math.floor(math.log2(num_heads))
        s = pow2(n) + pow2(2 * n)[0::2][: num_heads - n]
    return torch.tensor(s, dtype=torch.float32)


def generate_alibi_bias(slopes):
    def alibi_mod(score, b, h, q_idx, kv_idx):
        bias = (q_idx - kv_idx) * slopes[h]
        return score + bias
    return alibi_mod


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    b = torch.arange(B, device=q.device).view(B, 1, 1, 1)
    h = torch.arange(H, device=q.device).view(1, H, 1, 1)
    q_idx = torch.arange(T, device=q.device).view(1, 1, T, 1)
    kv_idx = torch.arange(T, device=q.device).view(1, 1, 1, T)
    score_mod = generate_alibi_bias(alibi_slopes(H).to(q.device, q.dtype))
    scores = score_mod(q @ k.transpose(-2, -1) / math.sqrt(D), b, h, q_idx, kv_idx)
    keep = causal(b, h, q_idx, kv_idx)
    if attention_mask is not None:
        keep = keep & attention_mask[b, kv_idx]
    scores = scores.masked_fill(~keep, float("-inf"))
    return scores.softmax(dim=-1) @ v
# bug-line: 27
