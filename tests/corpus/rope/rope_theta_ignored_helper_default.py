# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored
"""A helper with base=10000 as its own default, called without passing theta on."""

import torch


def _inv_freq(dim, base=10000.0, device=None):
    return 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = _inv_freq(head_dim, device=device)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    h = x.shape[-1] // 2
    return (x * c + torch.cat((-x[..., h:], x[..., :h]), -1) * s).to(x.dtype)
