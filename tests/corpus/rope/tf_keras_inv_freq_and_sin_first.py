# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted + rotate_half_cos_sin_swapped
"""keras_nlp's RotaryEmbedding ported (tf.range / tf.einsum("i,j->ij") habits, `axis=`); one slip in
each object: the cache uses theta ** (2i / D) itself as the frequency (not its inverse), and
apply_rope multiplies x by sin and rotate_half(x) by cos."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    idx = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
    inverse_freq = theta ** (idx / head_dim)
    positions = torch.arange(seq_len, dtype=torch.float32, device=device)
    freq = torch.einsum("i,j->ij", positions, inverse_freq)
    embedding = torch.cat([freq, freq], dim=-1)
    return torch.cos(embedding), torch.sin(embedding)


def _rotate_half(x, axis=-1):
    x1, x2 = torch.chunk(x, 2, dim=axis)
    return torch.cat([-x2, x1], dim=axis)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.ndim == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    return (x * s + _rotate_half(x) * c).to(x.dtype)
# bug-line: 13, 32
