# attnprep: decoder_layer
# expect: passed
"""Correct: Phi-3's layer: one qkv_proj (q, k, v rows) and one gate_up_proj (gate rows, then up), HF's norm names, finfo.min masks."""
import torch
from torch import nn
import torch.nn.functional as F


class Phi3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    """Phi-3: one qkv_proj (q rows, then k, then v) and one gate_up_proj (gate rows, then up)."""

    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        op_size = num_heads * self.head_dim + 2 * (num_kv_heads * self.head_dim)
        self.input_layernorm = Phi3RMSNorm(d_model, eps=eps)
        self.qkv_proj = nn.Linear(d_model, op_size, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.post_attention_layernorm = Phi3RMSNorm(d_model, eps=eps)
        self.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def _rope(self, T, device):
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=device).float() / self.head_dim))
        freqs = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        residual = x
        h = self.input_layernorm(x)
        qkv = self.qkv_proj(h)
        query_pos = self.num_heads * self.head_dim
        kv = self.num_key_value_heads * self.head_dim
        q = qkv[..., :query_pos].view(B, T, -1, self.head_dim).transpose(1, 2)
        k = qkv[..., query_pos: query_pos + kv].view(B, T, -1, self.head_dim).transpose(1, 2)
        v = qkv[..., query_pos + kv:].view(B, T, -1, self.head_dim).transpose(1, 2)
        cos, sin = self._rope(T, x.device)
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.num_heads // self.num_key_value_heads
        k = k[:, :, None].expand(B, self.num_key_value_heads, n_rep, T, self.head_dim).reshape(B, -1, T, self.head_dim)
        v = v[:, :, None].expand(B, self.num_key_value_heads, n_rep, T, self.head_dim).reshape(B, -1, T, self.head_dim)
        w = torch.matmul(q, k.transpose(2, 3)) * self.head_dim ** -0.5
        min_dtype = torch.finfo(w.dtype).min
        mask = torch.full((T, T), min_dtype, device=x.device, dtype=w.dtype).triu(1)[None, None]
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask[:, None, None, :], min_dtype)
        w = F.softmax(w + mask, dim=-1, dtype=torch.float32).to(v.dtype)
        a = torch.matmul(w, v).transpose(1, 2).reshape(B, T, -1)
        h = residual + self.o_proj(a)
        residual = h
        up_states = self.gate_up_proj(self.post_attention_layernorm(h))
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * F.silu(gate)
        return residual + self.down_proj(up_states)
