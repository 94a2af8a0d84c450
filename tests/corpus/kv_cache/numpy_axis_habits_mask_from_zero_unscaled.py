# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset + missing_scale
"""numpy habits kept in torch: `axis=` everywhere torch takes it as an alias of dim (torch.cat,
Tensor.softmax, Tensor.sum), swapaxes for transpose, np-style names (arr_k, arr_v, n_past). Two
slips: the scores are never scaled by 1/sqrt(head_dim), and the causal mask is np.tril-like
(ones(T, S).tril()) without the cached length as its diagonal offset."""

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.n_heads, self.hd).swapaxes(1, 2)
        arr_k = self.k_proj(x).reshape(B, T, self.n_kv, self.hd).swapaxes(1, 2)
        arr_v = self.v_proj(x).reshape(B, T, self.n_kv, self.hd).swapaxes(1, 2)
        n_past = 0
        if cache is not None:
            n_past = cache[0].shape[2]
            arr_k = torch.cat((cache[0], arr_k), axis=2)
            arr_v = torch.cat((cache[1], arr_v), axis=2)
        S = n_past + T
        k = arr_k.repeat_interleave(self.n_heads // self.n_kv, 1)
        v = arr_v.repeat_interleave(self.n_heads // self.n_kv, 1)
        scores = q @ k.swapaxes(-1, -2)
        mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril()
        scores = torch.where(mask, scores, -torch.inf)
        probs = scores.softmax(axis=-1)
        out = (probs @ v).swapaxes(1, 2).reshape(B, T, C)
        return self.o_proj(out), (arr_k, arr_v)
# bug-line: 36, 37
