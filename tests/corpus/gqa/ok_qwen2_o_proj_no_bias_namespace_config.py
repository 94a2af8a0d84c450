# attnprep: gqa
# expect: passed
"""Correct: Qwen2Attention (q/k/v with bias, o_proj without: graded with a zero bias), a SimpleNamespace config, repeat_kv, HF's padding arithmetic on a finfo.min causal mask (Qwen2Attention 的写法：q/k/v 有 bias，o_proj 无 bias)."""
from types import SimpleNamespace

import torch
from torch import nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        config = SimpleNamespace(hidden_size=d_model, num_attention_heads=num_heads,
                                 num_key_value_heads=num_kv_heads, attention_dropout=dropout)
        self.config = config
        self.head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.is_causal = True
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        key_states = repeat_kv(self.k_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        value_states = repeat_kv(self.v_proj(x).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        min_dtype = torch.finfo(attn_weights.dtype).min
        causal_mask = torch.zeros(q_len, q_len, dtype=attn_weights.dtype, device=x.device)
        if is_causal:
            causal_mask = torch.full((q_len, q_len), fill_value=min_dtype, dtype=attn_weights.dtype, device=x.device)
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask = causal_mask[None, None, :, :].expand(bsz, 1, -1, -1).clone()
        if attention_mask is not None:
            padding_mask = causal_mask + (attention_mask[:, None, None, :] == 0).to(causal_mask.dtype)
            padding_mask = padding_mask == 1 if not is_causal else (attention_mask[:, None, None, :] == 0)
            causal_mask = causal_mask.masked_fill(padding_mask, min_dtype)
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=0.0 if not self.training else self.config.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output), attn_weights
