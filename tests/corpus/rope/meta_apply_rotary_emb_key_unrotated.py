# attnprep: rope
# expect: wrong_output
# diagnosis: rope_key_unrotated
"""Meta's llama apply_rotary_emb(xq, xk, freqs_cis) ported to the rotate-half cache: it rotates xq and hands xk back as it came in; apply_rope takes the key side."""

from typing import Optional, Tuple

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device)[: (head_dim // 2)].float() / head_dim))
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_emb(
    xq: torch.Tensor,
    xk: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    xq_out = xq.float() * cos + rotate_half(xq.float()) * sin
    return xq_out.type_as(xq), xk.type_as(xk)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: Optional[torch.Tensor] = None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    _, xk_out = apply_rotary_emb(x, x, cos, sin)
    return xk_out
# bug-line: 32
