# attnprep: decoder_layer
# expect: passed
"""Hugging Face's nested layout: DecoderLayer holds self_attn (q/k/v/o_proj) and mlp
(gate/up/down_proj) submodules and input_layernorm / post_attention_layernorm; position_embeddings
computed once and passed down as a (cos, sin) tuple."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
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
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, h, position_embeddings, attention_mask):
        B, T, _ = h.shape
        cos, sin = position_embeddings
        q = self.q_proj(h).view(B, T, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, -1, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(B, self.kv_heads, n_rep, T, self.head_dim).reshape(B, self.heads, T, self.head_dim)
        v = v[:, :, None].expand(B, self.kv_heads, n_rep, T, self.head_dim).reshape(B, self.heads, T, self.head_dim)
        w = torch.matmul(q, k.transpose(2, 3)) * self.head_dim ** -0.5
        w = w + attention_mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj(torch.matmul(w, v).transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.self_attn = Attention(d_model, num_heads, num_kv_heads)
        self.mlp = MLP(d_model, d_ff)
        self.input_layernorm = RMSNorm(d_model, eps=eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps=eps)
        self.rope_theta = rope_theta

    def _position_embeddings(self, x):
        T, D = x.shape[1], self.self_attn.head_dim
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, D, 2, dtype=torch.int64).float().to(x.device) / D))
        freqs = torch.arange(T, device=x.device).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def _mask(self, x, attention_mask):
        T = x.shape[1]
        min_dtype = torch.finfo(x.dtype).min
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :].bool()
        return torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, min_dtype)

    def forward(self, x, attention_mask=None):
        position_embeddings = self._position_embeddings(x)
        mask = self._mask(x, attention_mask)
        residual = x
        hidden_states = self.input_layernorm(x)
        hidden_states = residual + self.self_attn(hidden_states, position_embeddings, mask)
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        return residual + self.mlp(hidden_states)
