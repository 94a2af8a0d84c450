# attnprep: rope
# expect: wrong_output
# diagnosis: rope_emb_repeat_interleave + rotate_half_sign_flipped
"""Perl habits in names (s_ scalars, a_ arrays, h_ hashes), a `my`-block of declarations at the
top of each function, `unless` as `if not`; the cache's emb built with repeat_interleave(2) of the
frequencies instead of cat([freqs, freqs]), and rotate_half returning cat([x2, -x1])."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    # my ($s_half, $a_inv, $a_pos);
    s_half = head_dim // 2
    a_inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    a_pos = torch.arange(seq_len, device=device, dtype=torch.float32)
    a_freqs = torch.outer(a_pos, a_inv)  # (T, D/2)
    assert a_freqs.shape[-1] == s_half
    a_emb = a_freqs.repeat_interleave(2, dim=-1)
    return a_emb.cos(), a_emb.sin()


def rotate_half(a_x):
    # my ($a_x1, $a_x2) = split_half($a_x);
    a_x1, a_x2 = a_x.chunk(2, dim=-1)
    return torch.cat([a_x2, -a_x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    h_opts = {"positions": positions}
    s_T = x.shape[-2]
    if not (h_opts["positions"] is not None):
        h_opts["positions"] = torch.arange(s_T, device=x.device)
    a_cos = cos[h_opts["positions"]]
    a_sin = sin[h_opts["positions"]]
    if a_cos.dim() == 3:  # (B, T, D): one row of positions per sample
        a_cos, a_sin = a_cos[:, None], a_sin[:, None]
    a_out = x.float() * a_cos + rotate_half(x.float()) * a_sin
    return a_out.to(x.dtype)
# bug-line: 17, 24
