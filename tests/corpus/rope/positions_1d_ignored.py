# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""vLLM-ish apply_rope that gathers per-sample positions (B, T) but drops 1-D positions (T,) as if they were arange(T): the mistake shows only in the (T,)-positions cases."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=device).float() / head_dim))
    freqs = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None):
    B, H, T, D = x.shape
    if positions is not None and positions.dim() == 2:  # 每个样本自己的位置 (B, T)
        c = cos[positions].unsqueeze(1)  # (B, 1, T, D)
        s = sin[positions].unsqueeze(1)
    else:  # 一维位置：当作 0..T-1
        c = cos[:T]
        s = sin[:T]
    return (x * c.to(x.dtype) + _rotate_half(x) * s.to(x.dtype)).to(x.dtype)
# bug-line: 28, 29
