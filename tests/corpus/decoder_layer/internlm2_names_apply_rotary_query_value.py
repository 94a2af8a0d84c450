# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""InternLM2's decoder-layer naming (attention_norm / ffn_norm, attention.wq / wk / wv / wo,
feed_forward.w1 / w3 / w2) with Llama's apply_rotary_pos_emb(q, k, cos, sin) returning the pair, the
repeat_kv of Hugging Face and a float32 softmax."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class InternLM2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(hidden_states.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class InternLM2Attention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_theta):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.wq = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(num_heads * self.head_dim, d_model, bias=False)

    def forward(self, hidden_states, attention_mask=None):
        bsz, q_len, _ = hidden_states.shape
        q = self.wq(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.wk(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.wv(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=q.device).float() / self.head_dim))
        freqs = torch.outer(torch.arange(q_len, device=q.device).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
        q, v = apply_rotary_pos_emb(q, v, cos, sin)
        n_rep = self.num_heads // self.num_key_value_heads
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal = torch.ones(q_len, q_len, dtype=torch.bool, device=q.device).tril()
        allowed = causal if attention_mask is None else causal & attention_mask[:, None, None, :]
        attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.wo(out)


class InternLM2MLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attention = InternLM2Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.feed_forward = InternLM2MLP(d_model, d_ff)
        self.attention_norm = InternLM2RMSNorm(d_model, eps)
        self.ffn_norm = InternLM2RMSNorm(d_model, eps)

    def forward(self, x, attention_mask=None):
        residual = x
        h = self.attention(self.attention_norm(x), attention_mask)
        h = residual + h
        return h + self.feed_forward(self.ffn_norm(h))
# bug-line: 55
