# attnprep: kv_cache
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""llama.cpp's habit of building KQ_mask only when the batch is a prompt (n_past == 0): a one-token
decode step needs no mask, so it looks right, but a chunk of several new tokens after a cache sees
its own future tokens. ggml names (n_past, n_tokens, n_kv, kq_scale)."""

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_head, self.n_head_kv = num_heads, num_kv_heads
        self.n_embd_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.n_embd_head)
        self.wv = nn.Linear(d_model, num_kv_heads * self.n_embd_head)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, n_tokens, n_embd = x.shape
        Q = self.wq(x).view(B, n_tokens, self.n_head, self.n_embd_head).transpose(1, 2)
        K = self.wk(x).view(B, n_tokens, self.n_head_kv, self.n_embd_head).transpose(1, 2)
        V = self.wv(x).view(B, n_tokens, self.n_head_kv, self.n_embd_head).transpose(1, 2)
        n_past = 0
        if cache is not None:
            n_past = cache[0].shape[2]
            K = torch.cat([cache[0], K], dim=2)
            V = torch.cat([cache[1], V], dim=2)
        n_kv = K.shape[2]
        kq_scale = 1.0 / self.n_embd_head ** 0.5
        Kr = K.repeat_interleave(self.n_head // self.n_head_kv, dim=1)
        Vr = V.repeat_interleave(self.n_head // self.n_head_kv, dim=1)
        KQ = torch.matmul(Q, Kr.transpose(-1, -2)) * kq_scale
        if n_past == 0:
            KQ_mask = torch.full((n_tokens, n_kv), float("-inf"), device=x.device).triu(1 + n_past)
            KQ = KQ + KQ_mask
        KQ = torch.softmax(KQ, dim=-1)
        KQV = torch.matmul(KQ, Vr).transpose(1, 2).reshape(B, n_tokens, n_embd)
        return self.wo(KQV), (K, V)
# bug-line: 37
