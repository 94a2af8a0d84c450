# attnprep: decoder_layer
# expect: passed
"""Correct: Mistral's layer with the RoPE frequencies kept RoFormer-style as nn.Parameter(inv_freq, requires_grad=False), and position_ids from the padding mask (cumsum - 1): RoPE is relative, so the scores between real tokens are those of positions 0..T-1."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MistralRMSNorm(nn.Module):
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
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class DecoderLayer(nn.Module):
    """Mistral's layer as generate() runs it: position_ids from the padding mask (cumsum - 1), so a
    left-padded sample's first real token sits at position 0. RoPE is relative: the scores between
    real tokens are those of positions 0..T-1."""

    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() / self.head_dim))
        self.inv_freq = nn.Parameter(inv_freq, requires_grad=False)  # RoFormer-style frozen parameter
        self.input_layernorm = MistralRMSNorm(d_model, eps)
        self.post_attention_layernorm = MistralRMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, attention_mask=None):
        bsz, q_len, _ = x.shape
        if attention_mask is not None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        else:
            position_ids = torch.arange(q_len, device=x.device)[None].expand(bsz, -1)
        freqs = position_ids[..., None].float() * self.inv_freq[None, None, :].float()   # (B, T, D/2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        residual = x
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = k.repeat_interleave(self.num_key_value_groups, dim=1)
        v = v.repeat_interleave(self.num_key_value_groups, dim=1)
        attn = (q @ k.transpose(2, 3)) * self.head_dim ** -0.5
        min_dtype = torch.finfo(attn.dtype).min
        causal_mask = torch.full((q_len, q_len), min_dtype, dtype=attn.dtype, device=x.device).triu(1)
        causal_mask = causal_mask[None, None].expand(bsz, 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.masked_fill(~attention_mask[:, None, None, :].bool(), min_dtype)
        attn = F.softmax(attn + causal_mask, dim=-1, dtype=torch.float32).to(q.dtype)
        out = (attn @ v).transpose(1, 2).reshape(bsz, q_len, -1)
        h = residual + self.o_proj(out)
        m = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))
