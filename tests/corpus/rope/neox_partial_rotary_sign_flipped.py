# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_sign_flipped
"""GPT-NeoX's rotary (rotary_ndims = head_dim here), cos / sin cached in float32; its rotate_half returns
cat([x2, -x1]): the sign is on the wrong half."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device, dtype=inv_freq.dtype)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.size(-2), device=x.device)
    cos = cos[positions].unsqueeze(-3) if positions.dim() == 2 else cos[positions]
    sin = sin[positions].unsqueeze(-3) if positions.dim() == 2 else sin[positions]
    return (x * cos + rotate_half(x) * sin).type_as(x)
# bug-line: 21
