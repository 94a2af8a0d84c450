# attnprep: rope
# expect: passed
"""Correct: LlamaRotaryEmbedding (inv_freq buffer, @torch.no_grad() forward, position_ids) for the cache; cos / sin gathered, cast to x's dtype as HF does, apply_rotary_pos_emb(unsqueeze_dim=1)."""
import torch


class LlamaRotaryEmbedding(torch.nn.Module):
    def __init__(self, dim, base=10000.0, device=None):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    rotary = LlamaRotaryEmbedding(head_dim, base=theta, device=device)
    position_ids = torch.arange(seq_len, device=device)[None]
    cos, sin = rotary(torch.empty(0, device=device), position_ids)
    return cos[0], sin[0]


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    if positions.dim() == 1:
        positions = positions.unsqueeze(0).expand(B, T)
    cos, sin = cos[positions].to(x.dtype), sin[positions].to(x.dtype)  # (B, T, D), HF casts to x's dtype
    return apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=1)
