# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half
"""Written docstring-first with doctest examples (run with `python -m doctest rope.py`): each helper
says what it returns on a tiny input, the code follows the examples."""
import torch


def inverse_frequencies(head_dim, theta=10000.0, device=None):
    """theta ** (-2i / head_dim) for i = 0 .. head_dim/2 - 1.

    >>> inverse_frequencies(4, theta=100.0)
    tensor([1.0000, 0.1000])
    """
    i = torch.arange(head_dim // 2, dtype=torch.float32, device=device)
    return 1.0 / theta ** (i / head_dim)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    """cos, sin of shape (seq_len, head_dim), the angles laid out [freqs, freqs].

    >>> cos, sin = rope_cache(3, 4)
    >>> cos.shape, sin[0].tolist()
    (torch.Size([3, 4]), [0.0, 0.0, 0.0, 0.0])
    """
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    angles = t[:, None] * inverse_frequencies(head_dim, theta, device)[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def rotate_half(x):
    """
    >>> rotate_half(torch.tensor([1., 2., 3., 4.]))
    tensor([-3., -4.,  1.,  2.])
    """
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    """x (B, H, T, D) rotated at `positions` ((T,) or (B, T); default 0 .. T-1), in x's dtype.

    >>> x = torch.ones(1, 1, 2, 4)
    >>> c, s = rope_cache(2, 4)
    >>> apply_rope(x, c, s)[0, 0, 0].tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    T = x.shape[-2]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions], sin[positions]
    if c.dim() == 3:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    return (x * c + rotate_half(x) * s).to(x.dtype)
# bug-line: 16
