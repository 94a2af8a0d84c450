# attnprep: decoder_layer
# expect: passed
# The old Hugging Face LlamaRotaryEmbedding with _set_cos_sin_cache (buffers extended when a longer
# sequence arrives), an attention class inheriting from a base class, input_layernorm /
# post_attention_layernorm names, mlp with gate_proj / up_proj / down_proj.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=8, base=10000.0, device=None):
        super().__init__()
        self.dim, self.base = dim, base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float().to(device) / self.dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._set_cos_sin_cache(max_position_embeddings, device=self.inv_freq.device, dtype=torch.get_default_dtype())

    def _set_cos_sin_cache(self, seq_len, device, dtype):
        self.max_seq_len_cached = seq_len
        t = torch.arange(self.max_seq_len_cached, device=device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq.to(device))
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)

    def forward(self, x, seq_len):
        if seq_len > self.max_seq_len_cached or self.cos_cached.device != x.device:
            self._set_cos_sin_cache(seq_len=max(seq_len, self.max_seq_len_cached), device=x.device, dtype=x.dtype)
        return self.cos_cached[:seq_len].to(x.dtype), self.sin_cached[:seq_len].to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dt = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dt)


class BaseAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

    def shape(self, t, heads):
        B, T, _ = t.shape
        return t.view(B, T, heads, self.head_dim).transpose(1, 2)


class LlamaAttention(BaseAttention):
    def __init__(self, hidden_size, num_heads, num_kv_heads, rope_theta):
        super().__init__(hidden_size, num_heads, num_kv_heads)
        self.rotary_emb = RotaryEmbedding(self.head_dim, base=rope_theta)

    def forward(self, hidden_states, attention_mask=None):
        B, T, _ = hidden_states.shape
        q = self.shape(self.q_proj(hidden_states), self.num_heads)
        k = self.shape(self.k_proj(hidden_states), self.num_key_value_heads)
        v = self.shape(self.v_proj(hidden_states), self.num_key_value_heads)
        cos, sin = self.rotary_emb(v, seq_len=T)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.num_heads // self.num_key_value_heads
        k = torch.repeat_interleave(k, n_rep, dim=1)
        v = torch.repeat_interleave(v, n_rep, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        bias = torch.full((T, T), torch.finfo(w.dtype).min, device=w.device, dtype=w.dtype).triu(1)[None, None]
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], torch.finfo(w.dtype).min)
        w = F.softmax(w + bias, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj(torch.matmul(w, v).transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.self_attn = LlamaAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.mlp = MLP(d_model, d_ff)
        self.input_layernorm = RMSNorm(d_model, eps=eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps=eps)

    def forward(self, x, attention_mask=None):
        residual = x
        h = self.self_attn(self.input_layernorm(x), attention_mask)
        h = residual + h
        residual = h
        return residual + self.mlp(self.post_attention_layernorm(h))
