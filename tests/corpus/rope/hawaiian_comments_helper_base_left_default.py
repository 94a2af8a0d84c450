# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored
"""Hawaiian comments; the inverse frequencies come from a small helper whose base defaults to a
module constant, and rope_cache calls it without passing its own theta (every theta gives the
10000 cache)."""
import torch

ROPE_BASE = 10000.0


def _inv_freq(head_dim, base=ROPE_BASE, device=None):
    # nā alapine hoʻohuli: 1 / base^(2i/D)
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    return 1.0 / (base ** exponents)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = _inv_freq(head_dim, device=device)
    # nā kūlana 0 .. T-1
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    freqs = torch.outer(t, inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if c.dim() == 2:  # (T, D) -> (1, 1, T, D)
        c, s = c[None, None], s[None, None]
    else:  # (B, T, D) -> (B, 1, T, D)
        c, s = c[:, None], s[:, None]
    # huli ʻia
    return (x.float() * c + _rotate_half(x.float()) * s).to(x.dtype)
# bug-line: 19
