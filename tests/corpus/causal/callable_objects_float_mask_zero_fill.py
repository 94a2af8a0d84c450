# attnprep: causal
# expect: mask_leak
# diagnosis: mask_dtype + mask_fill_zero
"""Callable objects instead of functions: small classes with __call__ and a module-level instance
under the contract's name, state (the fill value, the mask factory) kept on the instance."""
import math

import torch


class CausalMask:
    def __init__(self, diagonal=0):
        self.diagonal = diagonal

    def __call__(self, seq_len, device=None):
        return torch.ones(seq_len, seq_len, device=device).tril(self.diagonal)


class CausalAttention:
    fill = 0.0

    def __init__(self, mask_fn):
        self.mask_fn = mask_fn

    def __call__(self, q, k, v, attention_mask=None):
        T, D = q.shape[-2], q.shape[-1]
        keep = self.mask_fn(T, device=q.device).bool()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        s = torch.where(keep, s, torch.full_like(s, self.fill))
        return torch.softmax(s, dim=-1) @ v


causal_mask = CausalMask()
causal_attention = CausalAttention(causal_mask)
# bug-line: 16, 20
