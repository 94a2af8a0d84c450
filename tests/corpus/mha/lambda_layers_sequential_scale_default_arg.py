# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""nn.Sequential pipelines of small custom Lambda layers (the Keras Lambda habit): the head split, the
scaling and the normalisation are each a Lambda whose lambda captures its sizes as default arguments."""
import math

import torch
import torch.nn as nn


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.split = Lambda(lambda t, h=num_heads: t.unflatten(-1, (h, -1)).transpose(1, 2))
        self.merge = Lambda(lambda t: t.transpose(1, 2).flatten(-2))
        self.scale = Lambda(lambda s, d=d_model: s / math.sqrt(d))
        self.normalise = nn.Sequential(Lambda(lambda s: s.softmax(-1)), nn.Dropout(dropout))

    def forward(self, x, attention_mask=None, is_causal=False):
        q = self.split(self.q_proj(x))
        k = self.split(self.k_proj(x))
        v = self.split(self.v_proj(x))
        scores = self.scale(q @ k.transpose(-2, -1))
        T = x.shape[1]
        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        probs = self.normalise(scores)
        return self.o_proj(self.merge(probs @ v))
# bug-line: 30
