# attnprep: rope
# expect: wrong_output
# diagnosis: rope_emb_repeat_interleave + rope_exponent_arange_half
"""A small `RopeTable` class with functools.cached_property for `inv_freq` and `emb`, used by the
module-level functions. Two slips in the cache: the exponent is arange(D/2)/D (not
arange(0, D, 2)/D), and emb duplicates each frequency in place with repeat_interleave(2) instead
of concatenating [freqs, freqs]; apply_rope's rotate_half is the halves form."""

from functools import cached_property

import torch


class RopeTable:
    def __init__(self, seq_len, dim, theta, device):
        self.seq_len, self.dim, self.theta, self.device = seq_len, dim, theta, device

    @cached_property
    def inv_freq(self):
        return 1.0 / self.theta ** (torch.arange(self.dim // 2, dtype=torch.float32, device=self.device) / self.dim)

    @cached_property
    def emb(self):
        freqs = torch.outer(torch.arange(self.seq_len, dtype=torch.float32, device=self.device), self.inv_freq)
        return freqs.repeat_interleave(2, dim=-1)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    table = RopeTable(seq_len, head_dim, theta, device)
    return table.emb.cos(), table.emb.sin()


def apply_rope(x, cos, sin, positions=None):
    T, D = x.shape[-2], x.shape[-1]
    pos = torch.arange(T, device=x.device) if positions is None else positions
    c, s = cos[pos], sin[pos]
    if pos.dim() == 2:
        c, s = c[:, None], s[:, None]
    rot = torch.cat([-x[..., D // 2:], x[..., : D // 2]], dim=-1)
    return (x * c + rot * s).to(x.dtype)
# bug-line: 20, 25
