# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: decoder_shared_norm + decoder_causal_missing
"""A Cohere / Command-R port's habits (CohereDecoderLayer: one input_layernorm feeding both the
attention and the MLP of its parallel block) written back as Llama's sequential pre-norm; the MLP's
input normalised by input_layernorm again (post_attention_layernorm kept but unused), and the
attention's mask built from the padding mask alone, a causal flag defaulting to False in the
attention helper."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return self.weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.theta = rope_theta
        self.input_layernorm = RMSNorm(d_model, eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def attention(self, h, attention_mask=None, causal=False):
        B, T, _ = h.shape
        q = self.q_proj(h).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.head_dim, 2, device=h.device).float() / self.head_dim)
        ang = torch.arange(T, device=h.device).float()[:, None] * inv[None, :]
        cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / self.head_dim ** 0.5
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=h.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=h.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
        out = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out)

    def mlp(self, h):
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

    def forward(self, x, attention_mask=None):
        residual = x
        h = residual + self.attention(self.input_layernorm(x), attention_mask)
        return h + self.mlp(self.input_layernorm(h))
# bug-line: 73, 74
