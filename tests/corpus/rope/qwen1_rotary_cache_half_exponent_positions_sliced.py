# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rope_positions_ignored
"""Qwen(-1) habits: a RotaryEmbedding with _seq_len_cached / _rotary_pos_emb_cache updated on
demand, rotary_pos_emb_list of [cos, sin], apply_rotary_pos_emb(t, freqs) slicing the cache by
the current length, rotate_half with einops-like split."""
import torch


class RotaryEmbedding:
    def __init__(self, dim, base=10000.0, device=None):
        self.dim, self.base, self.device = dim, base, device
        self.inv_freq = 1.0 / (base ** (torch.arange(0, dim // 2, device=device).float() / dim))
        self._seq_len_cached = 0
        self._rotary_pos_emb_cache = None

    def update_rotary_pos_emb_cache(self, seqlen):
        if seqlen > self._seq_len_cached:
            self._seq_len_cached = seqlen
            seq = torch.arange(seqlen, device=self.inv_freq.device).float()
            freqs = torch.outer(seq.type_as(self.inv_freq), self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self._rotary_pos_emb_cache = [emb.cos(), emb.sin()]

    def __call__(self, max_seq_len):
        self.update_rotary_pos_emb_cache(max_seq_len)
        return [c[:max_seq_len] for c in self._rotary_pos_emb_cache]


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    cos, sin = RotaryEmbedding(head_dim, base=theta, device=device)(seq_len)
    return cos, sin


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    T = x.shape[-2]
    rot_dim = cos.shape[-1]
    cos, sin = cos[:T], sin[:T]
    t_ = x.float()
    t_rot, t_pass = t_[..., :rot_dim], t_[..., rot_dim:]
    t_rot = (t_rot * cos) + (_rotate_half(t_rot) * sin)
    return torch.cat((t_rot, t_pass), dim=-1).type_as(x)
# bug-line: 13, 43
