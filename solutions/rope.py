"""Rotary position embedding (RoPE) in the rotate-half form of GPT-NeoX, Llama and Hugging Face.

rope_cache precomputes cos and sin of the angle t·theta^(-2i/D) for every position t and frequency
i, laid out as [freqs, freqs] so that feature j and feature j + D/2 share an angle. apply_rope
rotates each such pair (x[j], x[j + D/2]) of a query or key by the angle of its absolute position:
x·cos + rotate_half(x)·sin. Applied to q and k, the score q_m·k_n then depends on m - n only.
"""

import torch


def rope_cache(
    seq_len: int, head_dim: int, theta: float = 10000.0, device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin: float32 (seq_len, head_dim), row t for position t, columns [freqs, freqs]."""
    exponent = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim  # (D/2,): 2i/D
    inv_freq = 1.0 / theta**exponent  # (D/2,): theta^(-2i/D), from 1 down towards 1/theta
    t = torch.arange(seq_len, dtype=torch.float32, device=device)  # (S,)
    freqs = torch.outer(t, inv_freq)  # (S, D/2): angle of position t, frequency i
    emb = torch.cat([freqs, freqs], dim=-1)  # (S, D): feature j and j + D/2 share an angle
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] on the last dim: the pair (x1[i], x2[i]) turned by 90 degrees."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # (..., D/2) each
    return torch.cat([-x2, x1], dim=-1)  # (..., D)


def apply_rope(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """Rotate x (B, H, T, D) by the absolute position of each token; returns x's shape and dtype.

    positions: long (T,) or (B, T), rows of cos / sin (S, D) to use; default arange(T). A decode
    step passes T_past + t, a left-padded batch its per-sample positions.
    """
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)  # (T,)
    cos, sin = cos[positions], sin[positions]  # (T, D) or (B, T, D)
    if positions.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D): broadcast over the heads
    out = x * cos + rotate_half(x) * sin  # (B, H, T, D), in float32 for a bf16 x (cos is float32)
    return out.to(x.dtype)
