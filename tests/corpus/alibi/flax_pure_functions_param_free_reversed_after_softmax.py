# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed + alibi_bias_after_softmax
"""Flax / JAX habits in torch: pure functions only, a `jnp`-like namespace of helpers, slopes built
with a list comprehension and jnp.array, the bias made by broadcasting aranges, masks as jnp.where
with a big negative number, nothing stateful."""
import math
import types

import torch

jnp = types.SimpleNamespace(
    array=lambda xs, dtype=torch.float32: torch.tensor(xs, dtype=dtype),
    arange=torch.arange, where=torch.where, einsum=torch.einsum, exp=torch.exp, tril=torch.tril,
)


def _pow2_slopes(n):
    start = 2.0 ** (-8.0 / n)
    return [start ** (i + 1) for i in range(n)]


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    slopes = _pow2_slopes(n)
    if n < num_heads:
        slopes += _pow2_slopes(2 * n)[0::2][: num_heads - n]
    return jnp.array(slopes[::-1])


def softmax(x, axis=-1):
    x = x - x.amax(axis, keepdim=True)
    e = jnp.exp(x)
    return e / e.sum(axis, keepdim=True)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device)
    pos = jnp.arange(T, device=q.device)
    rel = (pos[:, None] - pos[None, :]).to(q.dtype)                     # i - j
    bias = -slopes[:, None, None] * rel                                  # (H, T, T)
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    allowed = jnp.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    logits = jnp.where(allowed, logits, -1e10)
    weights = softmax(logits, axis=-1)
    weights = jnp.where(allowed, weights + bias, 0.0)
    return jnp.einsum("bhqk,bhkd->bhqd", weights, v)
# bug-line: 28, 49
