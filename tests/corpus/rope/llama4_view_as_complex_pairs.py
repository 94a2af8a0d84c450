# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""Llama-4's apply_rotary_emb habit (view_as_complex of the last dim in pairs, multiply, view_as_real,
flatten) applied to the exercise's rotate-half cos / sin tables."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))
    freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    half = D // 2
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions][..., :half], sin[positions][..., :half]  # (T, D/2) or (B, T, D/2)
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    freqs_cis = torch.complex(c, s)
    pairs = x.float().unflatten(-1, (half, 2))
    x_ = torch.view_as_complex(pairs.contiguous())
    y = torch.view_as_real(x_ * freqs_cis)  # (..., D/2, 2)
    return y.flatten(-2).to(x.dtype)
# bug-line: 25, 28
