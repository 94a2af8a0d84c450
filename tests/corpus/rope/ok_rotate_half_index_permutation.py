# attnprep: rope
# expect: passed
"""Correct: rotate-half written with an index permutation tensor (torch.cat of arange halves) and a sign vector,
cos/sin via torch.outer in float64 cast to float32."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = 1.0 / torch.tensor(theta, dtype=torch.float64, device=device) ** (
        torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    f = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), inv)
    emb = torch.cat([f, f], dim=1)
    return emb.cos().float(), emb.sin().float()


def apply_rope(x, cos, sin, positions=None):
    D = x.shape[-1]
    h = D // 2
    perm = torch.cat([torch.arange(h, D, device=x.device), torch.arange(0, h, device=x.device)])
    sign = torch.cat([-torch.ones(h, device=x.device), torch.ones(h, device=x.device)])
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    return (x * c + x.index_select(-1, perm) * sign * s).to(x.dtype)
