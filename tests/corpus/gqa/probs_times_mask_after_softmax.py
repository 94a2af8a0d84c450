# attnprep: gqa
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Written after round 3's fixes, to check the 'late' rule on another form: a float 0/1 mask
multiplied into the probabilities after the softmax (causal and padding alike), no renormalisation."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.d)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(num_heads * self.d, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2).repeat_interleave(self.h // self.g, 1)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2).repeat_interleave(self.h // self.g, 1)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)
        keep = torch.ones(B, 1, T, T, device=x.device)
        if is_causal:
            keep = keep * torch.ones(T, T, device=x.device).tril()
        if attention_mask is not None:
            keep = keep * attention_mask[:, None, None, :].float()
        probs = probs * keep
        return self.o_proj((probs @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 33
