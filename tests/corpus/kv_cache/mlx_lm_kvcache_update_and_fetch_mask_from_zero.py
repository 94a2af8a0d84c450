# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""MLX-LM ported to torch: a KVCache object with update_and_fetch and offset (built fresh from the
passed-in tuple on each call, so the module holds no state), create_causal_mask(N, offset) as
mlx_lm.models.base writes it, mx.repeat(keys, n_rep, axis=1) spelled repeat_interleave."""
import torch
import torch.nn as nn


class KVCache:
    def __init__(self, keys=None, values=None):
        self.keys, self.values = keys, values
        self.offset = 0 if keys is None else keys.shape[2]

    def update_and_fetch(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        self.offset += keys.shape[2]
        return self.keys, self.values

    @property
    def state(self):
        return self.keys, self.values


def create_causal_mask(N, offset=0, device=None):
    rinds = torch.arange(offset + N, device=device)
    linds = torch.arange(N, device=device)
    return linds[:, None] < rinds[None]  # True = blocked


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        B, L, D = x.shape
        queries = self.q_proj(x).reshape(B, L, self.n_heads, -1).transpose(1, 2)
        keys = self.k_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(1, 2)
        values = self.v_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(1, 2)
        kv = KVCache(*cache) if cache is not None else KVCache()
        mask = create_causal_mask(L, kv.offset, device=x.device)
        keys, values = kv.update_and_fetch(keys, values)
        n_rep = self.n_heads // self.n_kv_heads
        k = keys.repeat_interleave(n_rep, dim=1)
        v = values.repeat_interleave(n_rep, dim=1)
        scores = (queries * self.scale) @ k.transpose(-1, -2)
        scores = scores.masked_fill(mask, float("-inf"))
        output = scores.softmax(dim=-1) @ v
        output = output.transpose(1, 2).reshape(B, L, -1)
        return self.o_proj(output), kv.state
# bug-line: 32
