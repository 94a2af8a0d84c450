# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Python 3.10 structural pattern matching on the inputs' ranks (match / case with guards), a
rotate_half by torch.flip-free chunk, cos / sin gathered with index_select."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    match device:
        case str(name):
            dev = torch.device(name)
        case _:
            dev = device
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=dev, dtype=torch.float32) / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=dev, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    match positions:
        case None:
            c, s = cos[:T][None, None], sin[:T][None, None]
        case p if p.dim() == 2:
            c, s = cos[p][:, None], sin[p][:, None]            # (B, 1, T, D)
        case p:
            c, s = cos[:T][None, None], sin[:T][None, None]
    out = x.float() * c + rotate_half(x.float()) * s
    return out.to(x.dtype)
# bug-line: 34
