# attnprep: rope
# expect: wrong_output
# diagnosis: rope_emb_repeat_interleave + rope_positions_ignored
"""Falcon-H1's rotary naming (inv_freq, emb, rotate_half) with Russian comments; positions looked up
through an index tensor built in apply_rope."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    # обратные частоты: theta^(-2i/d)
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)  # (T, D/2)
    emb = freqs.repeat_interleave(2, dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    # первая и вторая половины: (-x2, x1)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    # позиции по умолчанию: 0 .. T-1
    idx = torch.arange(T, device=x.device)
    c, s = cos[idx], sin[idx]
    if c.dim() == 3:  # позиции (B, T): добавить ось голов
        c, s = c[:, None], s[:, None]
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 14, 27
