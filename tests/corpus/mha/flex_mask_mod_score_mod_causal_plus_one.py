# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""FlexAttention habits written out in plain torch: a score_mod and mask_mods over index tensors
(b, h, q_idx, kv_idx), and_masks / noop_mask, a dense create_mask that broadcasts them."""
import math
from typing import Callable

import torch
import torch.nn as nn

_mask_mod_signature = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def noop_mask(b, h, q_idx, kv_idx):
    return torch.ones_like(q_idx >= kv_idx)


def and_masks(*mods: _mask_mod_signature) -> _mask_mod_signature:
    def combined(b, h, q_idx, kv_idx):
        out = noop_mask(b, h, q_idx, kv_idx)
        for m in mods:
            out = out & m(b, h, q_idx, kv_idx)
        return out
    return combined


def causal_mask_mod(b, h, q_idx, kv_idx):
    return q_idx + 1 >= kv_idx


def padding_mask_mod(keep):
    def mod(b, h, q_idx, kv_idx):
        return keep[b, kv_idx]
    return mod


def create_mask(mod, B, H, Q_LEN, KV_LEN, device):
    b = torch.arange(B, device=device)[:, None, None, None]
    h = torch.arange(H, device=device)[None, :, None, None]
    q_idx = torch.arange(Q_LEN, device=device)[None, None, :, None]
    kv_idx = torch.arange(KV_LEN, device=device)[None, None, None, :]
    return mod(b, h, q_idx, kv_idx).expand(B, H, Q_LEN, KV_LEN)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def score_mod(self, score, b, h, q_idx, kv_idx):
        return score * (1.0 / math.sqrt(self.head_dim))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q, k, v = (p(x).unflatten(-1, (self.n_head, self.head_dim)).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        mods = []
        if is_causal:
            mods.append(causal_mask_mod)
        if attention_mask is not None:
            mods.append(padding_mask_mod(attention_mask))
        block_mask = create_mask(and_masks(*mods), B, self.n_head, T, T, x.device)
        scores = self.score_mod(q @ k.mT, None, None, None, None)
        scores = scores.masked_fill(~block_mask, float("-inf"))
        p = scores.softmax(-1)
        p = nn.functional.dropout(p, self.dropout, self.training)
        y = (p @ v).transpose(1, 2).flatten(2)
        return self.o_proj(y)
# bug-line: 29
