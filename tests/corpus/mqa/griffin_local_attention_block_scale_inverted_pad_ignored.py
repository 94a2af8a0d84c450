# attnprep: mqa
# expect: mask_leak
# diagnosis: scale_inverted + padding_mask_ignored
"""Griffin / RecurrentGemma's LocalAttentionBlock naming (proj_q / proj_k / proj_v / proj_final,
one key-value head, window_size None for a global layer, segment_pos), written for MQA; the scores
multiplied by sqrt(head_dim), and the padding mask built but never combined with the causal one."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, window_size=None):
        super().__init__()
        self.width = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.window_size = window_size  # None: a global layer
        self.proj_q = nn.Linear(d_model, d_model)
        self.proj_k = nn.Linear(d_model, self.head_dim)
        self.proj_v = nn.Linear(d_model, self.head_dim)
        self.proj_final = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        segment_pos = torch.arange(T, device=x.device)
        queries = self.proj_q(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, N, T, H)
        keys = self.proj_k(x)[:, None]  # (B, 1, T, H): one head for all
        values = self.proj_v(x)[:, None]
        logits = queries @ keys.transpose(-1, -2) * math.sqrt(self.head_dim)
        blocked = torch.zeros(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            blocked = segment_pos[None, :] > segment_pos[:, None]
        if attention_mask is not None:
            pad_blocked = ~attention_mask[:, None, None, :]  # (B, 1, 1, T)
        logits = logits.masked_fill(blocked, float("-inf"))
        probs = self.attn_dropout(logits.softmax(dim=-1))
        encoded = (probs @ values).transpose(1, 2).reshape(B, T, self.width)
        return self.proj_final(encoded)
# bug-line: 32, 38
