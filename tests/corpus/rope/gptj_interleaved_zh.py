# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""GPT-J 风格：apply_rope 把相邻的 (x[2i], x[2i+1]) 两两配对旋转（交错），而缓存是 cat([freqs, freqs])
的 rotate-half 布局；rope_cache 本身是对的。"""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.einsum("i,j->ij", t, inv_freq)  # (T, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)  # 相邻两维一组


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    cos, sin = cos[positions], sin[positions]
    if cos.dim() == 3:  # (B, T, D) -> (B, 1, T, D)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (x * cos + rotate_every_two(x) * sin).to(x.dtype)
# bug-line: 21
