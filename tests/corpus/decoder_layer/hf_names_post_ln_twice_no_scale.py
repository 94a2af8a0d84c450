# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm + missing_scale
"""HF names, one compact class: both norms declared, but post_attention_layernorm is called before
the attention as well as before the MLP (input_layernorm never used), and the scores are never
scaled by 1 / sqrt(head_dim)."""
import torch
import torch.nn.functional as F
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(hidden_states.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = num_heads, num_kv_heads, d_model // num_heads
        inv = 1.0 / rope_theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        self.register_buffer("inv_freq", inv, persistent=False)
        self.input_layernorm = Norm(d_model, eps)
        self.post_attention_layernorm = Norm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def self_attn(self, h, attention_mask):
        bsz, q_len, _ = h.shape
        q = self.q_proj(h).view(bsz, q_len, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(bsz, q_len, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(bsz, q_len, self.n_kv, self.head_dim).transpose(1, 2)
        freqs = torch.outer(torch.arange(q_len, device=h.device).float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        w = torch.matmul(q, k.transpose(2, 3))
        blocked = torch.ones(q_len, q_len, dtype=torch.bool, device=h.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :].bool()
        w = w.masked_fill(blocked, torch.finfo(w.dtype).min).softmax(-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)

    def forward(self, x, attention_mask=None):
        h = x + self.self_attn(self.post_attention_layernorm(x), attention_mask)
        y = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))
# bug-line: 66, 57
