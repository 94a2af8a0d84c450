# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rotate_half_sign_flipped
"""Phi-3's Phi3RotaryEmbedding habits (inv_freq computed in a helper, emb = cat((freqs, freqs))), with
the comments in Japanese as a Tokyo candidate writes them."""
import torch


def _compute_inv_freq(dim, base, device=None):
    # 周波数: base^(-2i/dim), i = 0 .. dim/2 - 1
    exponents = torch.arange(dim // 2, dtype=torch.int64, device=device).float() / dim
    return 1.0 / (base ** exponents)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = _compute_inv_freq(head_dim, theta, device)
    t = torch.arange(seq_len, dtype=torch.float32, device=device)  # 位置 0 .. seq_len-1
    freqs = torch.outer(t, inv_freq)  # (seq_len, head_dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # 前半と後半に同じ周波数
    return emb.cos(), emb.sin()


def rotate_half(x):
    # 後半を符号反転して前に: [-x2, x1]
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos = cos[positions]  # (T, D) または (B, T, D)
    sin = sin[positions]
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # ヘッド軸を追加
    out = x.float() * cos + rotate_half(x.float()) * sin
    return out.to(x.dtype)
# bug-line: 11, 27
