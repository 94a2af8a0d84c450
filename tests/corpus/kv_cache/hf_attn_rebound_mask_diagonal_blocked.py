# attnprep: kv_cache
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""HF-ish: a DynamicCache-like tuple, repeat_kv by expand + reshape, one name (attn) carried from the
scores to the probabilities; the causal mask offset by the past length with torch.triu(diagonal=past),
one short of past + 1: each new token is blocked from itself. (Before: blamed at the scores, which
share the reference's name of the probabilities.)"""
import math
import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        past = 0
        if cache is not None:
            past = cache[0].shape[-2]
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        new_cache = (k, v)
        kr = repeat_kv(k, self.num_key_value_groups)
        vr = repeat_kv(v, self.num_key_value_groups)
        attn = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(self.head_dim)
        kv_len = past + q_len
        causal = torch.triu(torch.full((q_len, kv_len), float("-inf"), device=x.device), diagonal=past)
        attn = attn + causal.to(attn.dtype)
        attn = nn.functional.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn, vr).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out), new_cache
# bug-line: 48
