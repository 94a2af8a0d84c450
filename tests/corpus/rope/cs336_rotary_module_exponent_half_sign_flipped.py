# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rotate_half_sign_flipped
"""Stanford CS336 habits: a RotaryPositionalEmbedding-like class (theta, d_k, max_seq_len, a
`register_buffer(..., persistent=False)` of the tables) that the two contract functions wrap,
jaxtyping-style shape strings as annotations, `token_positions` as the argument name inside. Two
slips, one per function: the exponent is arange(d_k // 2) / d_k (a step of 1, not 2), and
rotate_half returns [x2, -x1]."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        k = torch.arange(d_k // 2, dtype=torch.float32, device=device)
        inv_freq = theta ** (-k / d_k)
        pos = torch.arange(max_seq_len, dtype=torch.float32, device=device)
        ang = pos[:, None] * inv_freq[None, :]  # "seq d_k/2"
        emb = torch.cat((ang, ang), dim=-1)  # "seq d_k"
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    @staticmethod
    def rotate_half(x: "Float[Tensor, '... d_k']") -> "Float[Tensor, '... d_k']":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x2, -x1), dim=-1)

    @classmethod
    def forward_with(cls, x: "Float[Tensor, '... seq d_k']", cos: Tensor, sin: Tensor,
                     token_positions: "Int[Tensor, '... seq']") -> "Float[Tensor, '... seq d_k']":
        c, s = cos[token_positions], sin[token_positions]
        if token_positions.dim() == 2:
            c, s = c.unsqueeze(1), s.unsqueeze(1)
        return (x * c + cls.rotate_half(x) * s).to(x.dtype)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    rpe = RotaryPositionalEmbedding(theta, head_dim, seq_len, device=device)
    return rpe.cos_cached, rpe.sin_cached


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    return RotaryPositionalEmbedding.forward_with(x, cos, sin, positions)
# bug-line: 19, 30
