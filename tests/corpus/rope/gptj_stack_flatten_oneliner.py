# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""GPT-J's rotate_every_two in one line (stack of the odd and even lanes, flattened back), applied to the
rotate-half cache of the contract: the pairing convention is mixed up."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    freqs = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    rot = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    return (x.float() * c + rot.float() * s).to(x.dtype)
# bug-line: 23
