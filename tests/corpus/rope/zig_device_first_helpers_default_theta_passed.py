# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored
"""A Zig programmer's habits: the device passed first to every helper as an allocator would be,
comptime-like UPPER_CASE defaults at module level, small fn-per-step helpers with explicit
parameters and no defaults, `// defer`-style notes; the cache asks its angle helper for the
module's DEFAULT_THETA where the function's own theta was meant."""
import torch

DEFAULT_THETA = 10000.0  # const default_theta: f32 = 10000.0


def inv_frequencies(device, head_dim, theta):
    exponent = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    return 1.0 / theta ** exponent


def angles(device, seq_len, head_dim, theta):
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    return torch.outer(t, inv_frequencies(device, head_dim, theta))


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    a = angles(device, seq_len, head_dim, DEFAULT_THETA)
    emb = torch.cat([a, a], dim=-1)  # defer: nothing to free
    return emb.cos(), emb.sin()


def rotate_half(device, x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    device = x.device
    if positions is None:
        positions = torch.arange(x.shape[-2], device=device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    return (x * c + rotate_half(device, x) * s).to(x.dtype)
# bug-line: 24
