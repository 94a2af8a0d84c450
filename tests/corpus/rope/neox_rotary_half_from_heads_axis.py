# attnprep: rope
# expect: wrong_output
# diagnosis:
import torch


# GPT-NeoX style: the rotary dims are the whole head here (rotary_pct = 1.0)
class RotaryTables:
    def __init__(self, base: float = 10000.0):
        self.base = base

    def build(self, seq_len, dim, device=None):
        inv_freq = 1.0 / (self.base ** (torch.arange(0, dim, 2, device=device).float() / dim))
        t = torch.arange(seq_len, device=device, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    return RotaryTables(theta).build(seq_len, head_dim, device)


def rotate_half(x):
    half_dim = x.size(1) // 2
    first = x[..., :half_dim]
    second = x[..., half_dim:]
    return torch.cat((-second, first), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    seq_len = x.size(-2)
    if positions is None:
        positions = torch.arange(seq_len, device=x.device)
    cos = cos[positions]
    sin = sin[positions]
    if positions.dim() == 2:
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
# bug-line: 25
