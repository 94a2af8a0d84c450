# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""torch.compile-friendly layer: the module only holds weights, every step is a pure function with
static shapes (no .item(), no Python branch on tensor values), the mask built with torch.where."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rope_tables(T, D, theta, device):
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=device, dtype=torch.float32) / D)
    f = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv)
    f = torch.cat([f, f], -1)
    return f.cos(), f.sin()


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return (x * cos + rot * sin).to(x.dtype)


def attention(q, k, v, keep):
    s = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    s = torch.where(keep, s, torch.full_like(s, float("-inf")))
    return s.softmax(-1) @ v


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        self.attn_norm = nn.Parameter(torch.ones(d_model))
        self.ffn_norm = nn.Parameter(torch.ones(d_model))
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def _attn(self, h, attention_mask):
        B, T, C = h.shape
        q = self.q_proj(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        cos, sin = rope_tables(T, self.hd, self.theta, h.device)
        q, v = rope(q, cos, sin), rope(v, cos, sin)
        k = k.repeat_interleave(self.nh // self.nkv, dim=1)
        v = v.repeat_interleave(self.nh // self.nkv, dim=1)
        keep = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        o = attention(q, k, v, keep)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        h = x + self._attn(rms_norm(x, self.attn_norm, self.eps), attention_mask)
        ffn_in = rms_norm(h, self.ffn_norm, self.eps)
        return h + self.w2(F.silu(self.w1(ffn_in)) * self.w3(ffn_in))
# bug-line: 56
