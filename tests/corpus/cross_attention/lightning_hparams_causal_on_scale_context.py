# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_causal_mask + cross_scale_d_context
"""PyTorch Lightning habits in a plain module: a save_hyperparameters() that copies the constructor's
arguments into an AttributeDict-like self.hparams, every size read from hparams."""
import inspect
import math

import torch
import torch.nn as nn


class AttributeDict(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(key) from exc


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0, causal=True):
        super().__init__()
        self.save_hyperparameters()
        hp = self.hparams
        d_ctx = hp.d_context or hp.d_model
        self.head_dim = hp.d_model // hp.num_heads
        self.q_proj = nn.Linear(hp.d_model, hp.d_model)
        self.k_proj = nn.Linear(d_ctx, hp.d_model)
        self.v_proj = nn.Linear(d_ctx, hp.d_model)
        self.o_proj = nn.Linear(hp.d_model, hp.d_model)
        self.attn_dropout = nn.Dropout(hp.dropout)
        self.scale = 1.0 / math.sqrt(d_ctx)

    def save_hyperparameters(self):
        frame = inspect.currentframe().f_back
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        self.hparams = AttributeDict({n: frame.f_locals[n] for n in names})

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        H, D = self.hparams.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(context).view(B, S, H, D).transpose(1, 2)
        v = self.v_proj(context).view(B, S, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, T, S)
        if self.hparams.causal:
            att = att.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if context_mask is not None:
            att = att.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
        return self.o_proj(y)
# bug-line: 22, 33
