# attnprep: mqa
# expect: passed
"""Correct: a Hugging Face modeling file with num_key_value_heads = 1: repeat_kv(hidden, n_rep)
with expand + reshape, eager_attention_forward(module, query, key, value, attention_mask, scaling,
dropout) looked up in a dispatch dict, the padding and causal masks folded into one additive 4-d mask."""

from types import SimpleNamespace

import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    return torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous(), attn_weights


ATTENTION_FUNCTIONS = {"eager": eager_attention_forward}


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        cfg = SimpleNamespace(hidden_size=d_model, num_attention_heads=num_heads, num_key_value_heads=1,
                              attention_dropout=dropout, attn_implementation="eager")
        self.config = cfg
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.num_attention_heads * self.head_dim)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.num_key_value_heads * self.head_dim)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.num_key_value_heads * self.head_dim)
        self.o_proj = nn.Linear(cfg.num_attention_heads * self.head_dim, cfg.hidden_size)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        q = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        mask = torch.zeros(bsz, 1, q_len, q_len, dtype=x.dtype, device=x.device)
        min_dtype = torch.finfo(x.dtype).min
        if is_causal:
            mask.masked_fill_(torch.arange(q_len, device=x.device)[None, :] > torch.arange(q_len, device=x.device)[:, None], min_dtype)
        if attention_mask is not None:
            mask.masked_fill_(attention_mask[:, None, None, :].logical_not(), min_dtype)
        fn = ATTENTION_FUNCTIONS[self.config.attn_implementation]
        out, _ = fn(self, q, k, v, mask, scaling=self.scaling, dropout=0.0 if not self.training else self.config.attention_dropout)
        return self.o_proj(out.reshape(bsz, q_len, -1))
