# attnprep: decoder_layer
# expect: passed
"""Correct: the rotate-half RoPE computed as a complex product of (x1 + i x2) by e^{i theta} in float64,
einsum grouped attention with no repeat, torch.where masks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.H, self.G, self.D = num_heads, num_kv_heads, d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        self.attn_norm = nn.Parameter(torch.ones(d_model))
        self.ffn_norm = nn.Parameter(torch.ones(d_model))
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def _norm(self, x, w):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * w

    def _rope(self, x):  # (B, T, h, D)
        T, D = x.shape[1], x.shape[-1]
        inv = self.theta ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
        cis = torch.polar(torch.ones(T, D // 2, dtype=torch.float64, device=x.device),
                          torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * inv)
        x1, x2 = x.double().chunk(2, -1)
        z = torch.complex(x1, x2) * cis[None, :, None, :]
        return torch.cat([z.real, z.imag], -1).to(x.dtype)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        H, G, D = self.H, self.G, self.D
        a = self._norm(x, self.attn_norm)
        q = self._rope(self.q_proj(a).view(B, T, H, D)).view(B, T, G, H // G, D)
        k = self._rope(self.k_proj(a).view(B, T, G, D))
        v = self.v_proj(a).view(B, T, G, D)
        s = torch.einsum("btgrd,bsgd->bgrts", q, k) * D ** -0.5
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, None, :]
        s = torch.where(keep, s, torch.finfo(s.dtype).min)
        o = torch.einsum("bgrts,bsgd->btgrd", s.softmax(-1), v).reshape(B, T, C)
        h = x + self.o_proj(o)
        f = self._norm(h, self.ffn_norm)
        return h + self.w2(F.silu(self.w1(f)) * self.w3(f))
