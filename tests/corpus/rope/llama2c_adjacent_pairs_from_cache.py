# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""llama2.c's model.py habits (reshape to pairs, xq_r / xq_i, freqs_cos / freqs_sin) on the exercise's cos / sin."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device)[: (head_dim // 2)].float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(t, freqs)
    freqs = torch.cat((freqs, freqs), dim=-1)
    return torch.cos(freqs), torch.sin(freqs)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    freqs_cos = cos[positions][..., : D // 2]
    freqs_sin = sin[positions][..., : D // 2]
    if positions.dim() == 2:
        freqs_cos, freqs_sin = freqs_cos[:, None], freqs_sin[:, None]
    # reshape xq to match the complex representation
    x_r, x_i = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    # apply rotation using real numbers
    x_out_r = x_r * freqs_cos - x_i * freqs_sin
    x_out_i = x_r * freqs_sin + x_i * freqs_cos
    # flatten last two dimensions
    x_out = torch.stack([x_out_r, x_out_i], dim=-1).flatten(3)
    return x_out.type_as(x)
# bug-line: 31, 36
