# attnprep: gqa
# expect: passed
"""Correct: FlexAttention-like mask_mod closures (causal, padding) combined by and_masks and materialised on broadcast index grids; kv heads picked by an index tensor h // group."""
import math
import torch
import torch.nn as nn


def and_masks(*mods):
    def mod(b, h, q_idx, kv_idx):
        out = torch.ones((), dtype=torch.bool, device=q_idx.device)
        for m in mods:
            out = out & m(b, h, q_idx, kv_idx)
        return out
    return mod


def causal_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def padding_mod(attention_mask):
    def mod(b, h, q_idx, kv_idx):
        return attention_mask[b, kv_idx]
    return mod


def create_mask(mask_mod, B, T, device):
    b = torch.arange(B, device=device)[:, None, None, None]
    h = torch.zeros(1, 1, 1, 1, dtype=torch.long, device=device)
    q = torch.arange(T, device=device)[None, None, :, None]
    kv = torch.arange(T, device=device)[None, None, None, :]
    return mask_mod(b, h, q, kv).expand(B, 1, T, T)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kvh = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kvh, self.d).transpose(1, 2)
        kv_head = torch.arange(self.h, device=x.device) // (self.h // self.kvh)  # query head h -> kv head
        k, v = k[:, kv_head], v[:, kv_head]
        mods = []
        if is_causal:
            mods.append(causal_mod)
        if attention_mask is not None:
            mods.append(padding_mod(attention_mask))
        score = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mods:
            block = create_mask(and_masks(*mods), B, T, x.device)
            score = score.masked_fill(~block, float("-inf"))
        return self.o_proj(self.dropout(score.softmax(-1)) .matmul(v).transpose(1, 2).flatten(2))
