# attnprep: rope
# expect: passed
"""MLX's nn.RoPE ported to torch: dims, traditional=False (the rotate-half layout), base, scale=1.0 and
an offset; the frequencies as base ** (-arange(0, dims, 2) / dims) the way mlx.core writes them, the
rotation done on the two halves directly instead of a rotate_half helper."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    dims, base, scale = head_dim, theta, 1.0
    positions = torch.arange(seq_len, dtype=torch.float32, device=device) * scale
    freqs = torch.pow(torch.tensor(base, dtype=torch.float32), -torch.arange(0, dims, 2, dtype=torch.float32, device=device) / dims)
    theta_ = positions[:, None] * freqs[None, :]  # (L, dims/2)
    costheta, sintheta = torch.cos(theta_), torch.sin(theta_)
    return torch.cat([costheta, costheta], dim=-1), torch.cat([sintheta, sintheta], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c = cos[positions]
    s = sin[positions]
    if positions.dim() == 2:  # (B, T) -> (B, 1, T, D)
        c, s = c[:, None], s[:, None]
    half = x.shape[-1] // 2
    xf = x.float()
    x1, x2 = xf[..., :half], xf[..., half:]
    c1, s1 = c[..., :half], s[..., :half]
    rx1 = x1 * c1 - x2 * s1
    rx2 = x1 * s1 + x2 * c1
    return torch.cat([rx1, rx2], dim=-1).to(x.dtype)
