# attnprep: rope
# expect: passed
"""Correct: rope_cache and apply_rope are bound methods of a small nn.Module instance; rows picked with F.embedding."""
import torch
import torch.nn as nn


class _RotaryHalves(nn.Module):
    """A small module holding the rotation: rope_cache and apply_rope are its bound methods."""

    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def cache(self, seq_len, head_dim, theta=10000.0, device=None):
        inv_freq = torch.pow(theta, -torch.arange(0, head_dim, 2, device=device).float() / head_dim)
        t = torch.arange(seq_len, device=device, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().float(), emb.sin().float()

    def apply(self, x, cos, sin, positions=None):
        T = x.shape[-2]
        if positions is None:
            positions = torch.arange(T, device=x.device)
        c = torch.nn.functional.embedding(positions, cos)
        s = torch.nn.functional.embedding(positions, sin)
        if c.dim() == 3:                      # (B, T, D) -> (B, 1, T, D)
            c, s = c.unsqueeze(1), s.unsqueeze(1)
        x1, x2 = x.float().chunk(2, dim=-1)
        rot = torch.cat((-x2, x1), dim=-1)
        return (x.float() * c + rot * s).to(x.dtype)


_rotary = _RotaryHalves()
rope_cache = _rotary.cache
apply_rope = _rotary.apply
