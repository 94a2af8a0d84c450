# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_bias_after_softmax
"""Each step of ALiBi attention as a small helper of its own (`add_linear_bias`, `block`, `normalise`),
the attention written as a pipeline of reassignments of one `w`, the slopes by the paper's rule with
math.log2, positions by broadcasting aranges."""
import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    extra = [2.0 ** (-4.0 * (2 * i + 1) / n) for i in range(num_heads - n)]
    return torch.tensor(slopes + extra, dtype=torch.float32)


def add_linear_bias(w, slopes, T):
    pos = torch.arange(T, device=w.device)
    dist = (pos[:, None] - pos[None, :]).to(w.dtype)
    return w - slopes.to(w.device, w.dtype)[:, None, None] * dist


def block(w, keep):
    return w.masked_fill(~keep, float("-inf"))


def normalise(w):
    return torch.softmax(w, dim=-1)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    w = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    w = block(w, keep)
    w = normalise(w)
    w = add_linear_bias(w, alibi_slopes(H), T)
    return torch.einsum("bhij,bhjd->bhid", w, v)
# bug-line: 40, 41
