# attnprep: rope
# expect: passed
"""正确：知乎风格，旋转矩阵逐对写出：第 i 维与第 i + d/2 维组成一对（rotate-half 形式），
用 torch.gather 按位置取 cos / sin。"""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    # θ_i = theta^(-2i/d), i = 0 .. d/2-1
    i = torch.arange(head_dim // 2, device=device).float()
    theta_i = theta ** (-2 * i / head_dim)
    m = torch.arange(seq_len, device=device).float().unsqueeze(1)  # (seq_len, 1)
    angle = m * theta_i.unsqueeze(0)  # (seq_len, d/2)
    angle = torch.cat([angle, angle], dim=1)  # (seq_len, d)
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    if positions.dim() == 1:
        positions = positions.unsqueeze(0).expand(B, T)
    idx = positions.unsqueeze(-1).expand(B, T, D)  # (B, T, D)
    c = torch.gather(cos.unsqueeze(0).expand(B, -1, -1), 1, idx).unsqueeze(1)  # (B, 1, T, D)
    s = torch.gather(sin.unsqueeze(0).expand(B, -1, -1), 1, idx).unsqueeze(1)
    x1 = x[..., : D // 2]
    x2 = x[..., D // 2:]
    # [x1, x2] -> [x1 cos - x2 sin, x2 cos + x1 sin]
    rot = torch.cat([-x2, x1], dim=-1)
    out = x * c + rot * s
    return out.to(x.dtype)
