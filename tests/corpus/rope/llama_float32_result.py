# attnprep: rope
# expect: wrong_output
# diagnosis: output_dtype_not_kept
"""Llama-style apply_rope that upcasts x to float32 for the rotation (as it should) and returns the
float32 result: right in float32, the wrong dtype for a bfloat16 or float16 x."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device: torch.device | str | None = None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float().to(device) / head_dim))
    position_ids = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = position_ids[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos = cos[positions]
    sin = sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    x = x.float()
    return x * cos + rotate_half(x) * sin
# bug-line: 32
