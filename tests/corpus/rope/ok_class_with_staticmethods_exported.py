# attnprep: rope
# expect: passed
"""Correct: the two functions are static methods of a class and exported as module names; cos/sin
computed as one tensor and unbound."""
import math

import torch


class Rotary:
    @staticmethod
    def cache(seq_len, head_dim, theta=10000.0, device=None):
        inv = torch.exp(-math.log(theta) * torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
        ang = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv
        ang = torch.cat([ang, ang], -1)
        cs = torch.stack([ang.cos(), ang.sin()])
        return tuple(cs.unbind(0))

    @staticmethod
    def apply(x, cos, sin, positions=None):
        T = x.size(-2)
        if positions is None:
            cos, sin = cos[:T], sin[:T]
        else:
            cos, sin = cos[positions], sin[positions]
            if positions.ndim == 2:
                cos, sin = cos[:, None, :, :], sin[:, None, :, :]
        a, b = x[..., : x.size(-1) // 2], x[..., x.size(-1) // 2:]
        return torch.cat([a * cos[..., : a.size(-1)] - b * sin[..., : a.size(-1)],
                          b * cos[..., a.size(-1):] + a * sin[..., a.size(-1):]], -1).to(x.dtype)


rope_cache = Rotary.cache
apply_rope = Rotary.apply
