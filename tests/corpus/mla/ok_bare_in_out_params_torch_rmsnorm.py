# attnprep: mla
# expect: passed
"""Correct: every projection a bare (in, out) parameter used as x @ W, norms are torch's nn.RMSNorm(eps=1e-6)."""
import torch
import torch.nn as nn


def rope_pairs(x, theta):
    # x (B, T, H, r) -> pairs rotated, via torch.polar and complex64
    B, T, H, r = x.shape
    inv = 1.0 / (theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r))
    ang = torch.arange(T, device=x.device, dtype=torch.float32).unsqueeze(1) * inv
    cis = torch.polar(torch.ones_like(ang), ang)
    z = torch.view_as_complex(x.float().contiguous().view(B, T, H, r // 2, 2))
    return torch.view_as_real(z * cis[:, None, :]).view(B, T, H, r).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        H = num_heads
        P = lambda i, o: nn.Parameter(torch.randn(i, o) / i ** 0.5)
        self.Wqa = P(d_model, q_lora_rank)
        self.Wqb = P(q_lora_rank, H * (qk_nope_head_dim + qk_rope_head_dim))
        self.Wkva = P(d_model, kv_lora_rank + qk_rope_head_dim)
        self.Wkvb = P(kv_lora_rank, H * (qk_nope_head_dim + v_head_dim))
        self.Wo = P(H * v_head_dim, d_model)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.cfg = (H, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)

    def forward(self, x, attention_mask=None, is_causal=False):
        H, c, n, r, dv, theta = self.cfg
        B, T, _ = x.shape
        q = (self.q_norm(x @ self.Wqa) @ self.Wqb).view(B, T, H, n + r)
        q = torch.cat([q[..., :n], rope_pairs(q[..., n:], theta)], -1)
        a = x @ self.Wkva
        kpe = rope_pairs(a[..., c:].view(B, T, 1, r), theta)
        kv = (self.kv_norm(a[..., :c]) @ self.Wkvb).view(B, T, H, n + dv)
        k = torch.cat([kv[..., :n], kpe.expand(B, T, H, r)], -1)
        v = kv[..., n:]
        s = torch.einsum("bihd,bjhd->bhij", q, k) * (n + r) ** -0.5
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], torch.finfo(s.dtype).min)
        if is_causal:
            s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), torch.finfo(s.dtype).min)
        o = torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v).reshape(B, T, H * dv)
        return o @ self.Wo
