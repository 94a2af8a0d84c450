# attnprep: rope
# expect: wrong_output
# diagnosis: rope_emb_repeat_interleave
"""Kummenti bil-Malti (Maltese comments and names: pożizzjonijiet, frekwenzi, nofs, dawran); the
cache's layout a keyword parameter defaulting to a module constant no call overrides, and the
constant says "interleaved", so the frequencies are doubled with repeat_interleave."""
import torch

TQASSIM = "interleaved"  # kif jiġu rduppjati l-frekwenzi


def rope_cache(seq_len, head_dim, theta=10000.0, device=None, tqassim=TQASSIM):
    frekwenzi = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    pozizzjonijiet = torch.arange(seq_len, device=device, dtype=torch.float32)
    angoli = pozizzjonijiet[:, None] * frekwenzi[None, :]
    if tqassim == "interleaved":
        emb = angoli.repeat_interleave(2, dim=-1)
    else:
        emb = torch.cat([angoli, angoli], dim=-1)
    return emb.cos(), emb.sin()


def dawran_nofs(x):
    nofs = x.shape[-1] // 2
    return torch.cat([-x[..., nofs:], x[..., :nofs]], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c[:, None], s[:, None]
    return (x.float() * c + dawran_nofs(x.float()) * s).to(x.dtype)
# bug-line: 9
