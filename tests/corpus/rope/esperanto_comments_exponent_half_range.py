# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half
"""Komentoj en Esperanto (Esperanto comments and names: pozicioj, frekvencoj, duono, turni); the
inverse frequencies' exponent written as arange(D/2) / D (the pair index, not its even
dimension), in a helper with the exponent's range as a keyword default."""
import torch


def inversaj_frekvencoj(dim, theta, device=None, eksponentoj=None):
    # eksponentoj: la potencoj de theta, unu por ĉiu paro
    if eksponentoj is None:
        eksponentoj = torch.arange(dim // 2, device=device, dtype=torch.float32) / dim
    return theta ** (-eksponentoj)


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    pozicioj = torch.arange(seq_len, device=device, dtype=torch.float32)
    frekvencoj = pozicioj[:, None] * inversaj_frekvencoj(head_dim, theta, device)[None, :]
    emb = torch.cat((frekvencoj, frekvencoj), dim=-1)  # (T, D)
    return emb.cos(), emb.sin()


def turni_duonon(x):
    duono = x.shape[-1] // 2
    return torch.cat((-x[..., duono:], x[..., :duono]), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c = cos[positions]
    s = sin[positions]
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    return (x.float() * c + turni_duonon(x.float()) * s).type_as(x)
# bug-line: 13
