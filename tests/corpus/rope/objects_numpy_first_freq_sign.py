# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted + rotate_half_sign_flipped
"""Two objects, a mistake in each, numpy-first (np.power, np.concatenate spelled in torch): the cache
raises theta to +2i/D (never inverted), and rotate_half negates the first half instead of the second."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    i = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
    freq = torch.pow(theta, i / head_dim)
    pos = torch.arange(seq_len, dtype=torch.float32, device=device)
    ang = pos[:, None] * freq[None, :]
    ang = torch.concatenate([ang, ang], axis=-1)
    return torch.cos(ang), torch.sin(ang)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.concatenate([x[..., h:], -x[..., :h]], axis=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.ndim == 2:
        c, s = c[:, None], s[:, None]
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 11, 20
