# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored + alibi_bias_sign_flipped
"""llama.cpp's ggml_soft_max_ext ALiBi (max_bias = 8, n_head_log2, m0, m1) inside the attention,
and a separate alibi_slopes written as the plain 2^(-8i/H) for every H; one slip in each object:
alibi_slopes ignores the rule for a head count that is not a power of two, and the attention adds
+slope * (i - j) (the distance rewarded, not penalised)."""

import math

import torch


def alibi_slopes(num_heads):
    return torch.tensor([2 ** (-8 * i / num_heads) for i in range(1, num_heads + 1)], dtype=torch.float32)


def _ggml_slopes(n_head, max_bias=8.0, device=None):
    n_head_log2 = 2 ** math.floor(math.log2(n_head))
    m0 = 2.0 ** (-max_bias / n_head_log2)
    m1 = 2.0 ** (-(max_bias / 2.0) / n_head_log2)
    slopes = [m0 ** (h + 1) if h < n_head_log2 else m1 ** (2 * (h - n_head_log2) + 1) for h in range(n_head)]
    return torch.tensor(slopes, dtype=torch.float32, device=device)


def alibi_attention(q, k, v, attention_mask=None):
    B, n_head, n_tokens, n_embd_head = q.shape
    kq = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(n_embd_head))
    slope = _ggml_slopes(n_head, device=q.device).to(q.dtype)
    i = torch.arange(n_tokens, device=q.device)
    dist = (i[:, None] - i[None, :]).to(q.dtype)
    kq = kq + slope.view(n_head, 1, 1) * dist
    kq_mask = torch.ones(n_tokens, n_tokens, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        kq_mask = kq_mask & attention_mask[:, None, None, :]
    kq = kq.masked_fill(~kq_mask, float("-inf"))
    return torch.softmax(kq, dim=-1) @ v
# bug-line: 15, 32
