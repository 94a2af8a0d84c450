# attnprep: rope
# expect: passed
"""Hugging Face's Llama: LlamaRotaryEmbedding's inv_freq @ positions in float32, rotate_half and
apply_rotary_pos_emb with cos / sin gathered by position_ids and unsqueeze_dim=1."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / head_dim))
    position_ids = torch.arange(seq_len, device=device)[None, :]  # (1, S)
    inv_freq_expanded = inv_freq[None, :, None].float()  # (1, D/2, 1)
    position_ids_expanded = position_ids[:, None, :].float()  # (1, 1, S)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)  # (1, S, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[0], emb.sin()[0]


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    bsz, _, seq_len, _ = x.shape
    if positions is None:
        positions = torch.arange(seq_len, device=x.device)
    position_ids = positions if positions.dim() == 2 else positions[None, :].expand(bsz, -1)
    cos = cos[position_ids].unsqueeze(1)  # (B, 1, T, D), unsqueeze_dim=1
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (x * cos) + (rotate_half(x) * sin)
    return q_embed.to(x.dtype)
