# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_inverted
"""logging habits: a module logger, log.debug of every shape with %-style arguments (never shown at
the default level); the scores were multiplied by sqrt(head_dim) instead of divided."""
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger(__name__)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        log.debug("MQA d_model=%d heads=%d head_dim=%d", d_model, num_heads, self.head_dim)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).unsqueeze(1)  # (B, 1, T, D): one key head for all query heads
        v = self.v_proj(x).unsqueeze(1)
        log.debug("q %s k %s v %s", tuple(q.shape), tuple(k.shape), tuple(v.shape))
        att = torch.matmul(q, k.transpose(2, 3)) * math.sqrt(self.head_dim)
        log.debug("scores %s", tuple(att.shape))
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        if is_causal:
            keep = torch.tril(torch.ones(T, T, device=x.device)).bool()
            att = att.masked_fill(~keep, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        log.debug("y %s", tuple(y.shape))
        return self.o_proj(y)
# bug-line: 33
