# attnprep: kv_cache
# expect: passed
"""Correct: Hugging Face habits with a tuple cache: getattr(config, "head_dim", None) or
hidden // heads on a SimpleNamespace config, eager_attention_forward(module, query, key, value,
attention_mask, scaling, dropout) from an ALL_ATTENTION_FUNCTIONS dict, repeat_kv inside it, an
additive float causal mask offset by the cached length (torch.full(...).triu(past + 1))."""

from types import SimpleNamespace

import torch
import torch.nn as nn


def repeat_kv(h, n_rep):
    b, kvh, s, d = h.shape
    return h if n_rep == 1 else h[:, :, None].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key, value = repeat_kv(key, module.num_key_value_groups), repeat_kv(value, module.num_key_value_groups)
    w = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        w = w + attention_mask
    w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(w, value).transpose(1, 2).contiguous(), w


ALL_ATTENTION_FUNCTIONS = {"eager": eager_attention_forward}


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        config = SimpleNamespace(hidden_size=d_model, num_attention_heads=num_heads,
                                 num_key_value_heads=num_kv_heads, _attn_implementation="eager")
        self.config = config
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        q_len, kv_len = x.shape[1], k.shape[2]
        past = kv_len - q_len
        mask = torch.full((q_len, kv_len), torch.finfo(x.dtype).min, dtype=x.dtype, device=x.device).triu(past + 1)
        fn = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        out, _ = fn(self, q, k, v, mask[None, None], scaling=self.scaling, dropout=0.0)
        return self.o_proj(out.reshape(*input_shape, -1)), (k, v)
