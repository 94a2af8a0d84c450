# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rotate_half_sign_flipped
"""Gemma 3 habits (modeling_gemma3.py): a `rope_local_base_freq`-style theta argument, inv_freq
built in a `_compute_default_rope_parameters`-like helper returning (inv_freq, attention_factor),
position_ids expanded with [:, None] as HF does, cos / sin cast to x's dtype at the end. Two slips,
one per function: the exponent is arange(D/2) / D (the step of 2 dropped), and rotate_half returns
[x2, -x1]."""

import torch


def _compute_default_rope_parameters(head_dim, base, device=None):
    attention_factor = 1.0
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim // 2, dtype=torch.int64).to(device=device, dtype=torch.float) / head_dim))
    return inv_freq, attention_factor


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq, attention_scaling = _compute_default_rope_parameters(head_dim, theta, device)
    position_ids = torch.arange(seq_len, device=device)[None, :].float()  # (1, S)
    freqs = (inv_freq[None, :, None] @ position_ids[:, None, :]).transpose(1, 2)[0]  # (S, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
# bug-line: 15, 30
