# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""Meta's llama model.py habits brought to the rotate-half exercise: the cache is right (as the
contract says), but apply_rope pairs adjacent features (x[2i], x[2i+1]) through
torch.view_as_complex, reading cos / sin of the first half of the row as the pair's angle, as in
reshape_for_broadcast + apply_rotary_emb."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    pos = torch.arange(T, device=x.device) if positions is None else positions
    c, s = cos[pos][..., : D // 2], sin[pos][..., : D // 2]
    if pos.dim() == 2:
        c, s = c[:, None], s[:, None]
    freqs_cis = torch.complex(c, s)
    xq_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(x)
# bug-line: 25, 26, 27
