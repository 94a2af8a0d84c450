# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""SmolLM3's habits: a per-layer use_rope flag (its NoPE layers: every fourth layer skips RoPE,
no_rope_layers in the config), here a layer that uses it; the rotary helper applied to a tuple of
tensors chosen by name, and the tuple names query and value."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmolLM3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    ROTATED = ("query", "value")  # which states RoPE turns

    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6, layer_idx=0,
                 no_rope_layer_interval=4):
        super().__init__()
        self.use_rope = (layer_idx + 1) % no_rope_layer_interval != 0
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.attn_norm = SmolLM3RMSNorm(d_model, eps)
        self.ffn_norm = SmolLM3RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def rotary(self, T, device):
        inv_freq = 1.0 / self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=device).float() / self.head_dim)
        freqs = torch.outer(torch.arange(T, device=device).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def self_attn(self, h, attention_mask):
        B, T, _ = h.shape
        states = {
            "query": self.q_proj(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2),
            "key": self.k_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2),
            "value": self.v_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2),
        }
        if self.use_rope:
            cos, sin = self.rotary(T, h.device)
            for name in self.ROTATED:
                t = states[name]
                states[name] = (t.float() * cos + rotate_half(t.float()) * sin).to(t.dtype)
        groups = self.num_heads // self.num_key_value_heads
        k = states["key"].repeat_interleave(groups, dim=1)
        v = states["value"].repeat_interleave(groups, dim=1)
        scores = states["query"] @ k.transpose(-1, -2) * self.head_dim ** -0.5
        blocked = torch.ones(T, T, dtype=torch.bool, device=h.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        scores = scores.masked_fill(blocked, float("-inf"))
        out = scores.softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, -1))

    def forward(self, x, attention_mask=None):
        h = x + self.self_attn(self.attn_norm(x), attention_mask)
        return h + self.w2(F.silu(self.w1(self.ffn_norm(h))) * self.w3(self.ffn_norm(h)))
# bug-line: 31
