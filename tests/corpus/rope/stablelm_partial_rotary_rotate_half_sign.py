# attnprep: rope
# expect: wrong_output
# diagnosis: rotate_half_sign_flipped
"""StableLM / Persimmon partial-rotary habits: rotary_ndims = int(head_dim * partial_rotary_factor),
query_rot / query_pass split and re-joined, a cos_cached / sin_cached pair sliced by position ids."""
import torch

partial_rotary_factor = 1.0  # the exercise rotates the whole head


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    rotary_ndims = int(head_dim * partial_rotary_factor)
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_ndims, 2, dtype=torch.int64).float().to(device) / rotary_ndims))
    t = torch.arange(seq_len, device=device, dtype=torch.int64).type_as(inv_freq)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos_cached, sin_cached = emb.cos(), emb.sin()
    return cos_cached, sin_cached


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    rotary_ndims = cos.shape[-1]
    cos = cos[positions]          # (T, D) or (B, T, D)
    sin = sin[positions]
    if cos.dim() == 2:
        cos, sin = cos[None, None], sin[None, None]
    else:
        cos, sin = cos[:, None], sin[:, None]
    x_rot, x_pass = x[..., :rotary_ndims], x[..., rotary_ndims:]
    x_embed = (x_rot * cos) + (rotate_half(x_rot) * sin)
    return torch.cat((x_embed, x_pass), dim=-1).to(x.dtype)
# bug-line: 24
