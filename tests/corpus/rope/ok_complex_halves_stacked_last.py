# attnprep: rope
# expect: passed
"""Correct: rotate-half done as complex multiplication of (x1 + i x2), halves stacked last for view_as_complex."""
import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    i = torch.arange(head_dim // 2, device=device, dtype=torch.float32)
    inv = 1.0 / theta ** (2 * i / head_dim)
    f = torch.arange(seq_len, device=device, dtype=torch.float32).outer(inv)
    f = f.repeat(1, 2)                                       # [freqs, freqs]
    return torch.cos(f), torch.sin(f)


def apply_rope(x, cos, sin, positions=None):
    T, D = x.shape[-2], x.shape[-1]
    pos = torch.arange(T, device=x.device) if positions is None else positions
    c, s = cos[pos][..., : D // 2], sin[pos][..., : D // 2]
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    z = torch.view_as_complex(torch.stack(x.float().chunk(2, dim=-1), dim=-1).contiguous())   # x1 + i x2
    w = torch.complex(c.float(), s.float())
    r = torch.view_as_real(z * w)                            # (..., D/2, 2): real = new x1, imag = new x2
    return torch.cat([r[..., 0], r[..., 1]], dim=-1).to(x.dtype)
