# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""MLX's ALiBi (mlx-examples) translated: create_alibi_matrix / create_alibi_slope as static helpers."""
import math

import torch


def _pow2_slopes(n):
    return [2.0 ** (-8.0 * i / n) for i in range(n, 0, -1)]


def alibi_slopes(num_heads):
    x = 2 ** math.floor(math.log2(num_heads))
    out = _pow2_slopes(x)
    if x < num_heads:
        out = out + _pow2_slopes(2 * x)[0::2][: num_heads - x]
    return torch.tensor(out, dtype=torch.float32)


def create_alibi_matrix(q_len, k_len, device):
    x1 = torch.arange(k_len, device=device)
    x2 = torch.arange(q_len, device=device)
    return -(x1[None, :] - x2[:, None]).abs()  # -(i - j) below the diagonal


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scale = D ** -0.5
    scores = (q * scale) @ k.transpose(-1, -2)
    slope = alibi_slopes(H).to(q.device, q.dtype)[:, None, None]
    scores = scores + slope * create_alibi_matrix(T, T, q.device).to(q.dtype)
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 11
