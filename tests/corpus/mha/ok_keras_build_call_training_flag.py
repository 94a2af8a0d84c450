# attnprep: mha
# expect: passed
"""Keras habits ported to torch: build(input_shape) creates the weights from the input width and sets
self.built, call(inputs, mask=None, training=False, use_causal_mask=False) does the work, forward only
hands over; masks are Keras' additive (1 - keep) * -1e9 terms."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.units = d_model
        self.num_heads = num_heads
        self.rate = dropout
        self.built = False
        self.build((None, None, d_model))

    def build(self, input_shape):
        width = input_shape[-1]
        self.q_proj = nn.Linear(width, self.units)
        self.k_proj = nn.Linear(width, self.units)
        self.v_proj = nn.Linear(width, self.units)
        self.o_proj = nn.Linear(self.units, width)
        self.depth = self.units // self.num_heads
        self.built = True

    def split_heads(self, t, batch_size):
        t = t.reshape(batch_size, -1, self.num_heads, self.depth)
        return t.permute(0, 2, 1, 3)

    def call(self, inputs, mask=None, training=False, use_causal_mask=False):
        batch_size = inputs.shape[0]
        query = self.split_heads(self.q_proj(inputs), batch_size)
        key = self.split_heads(self.k_proj(inputs), batch_size)
        value = self.split_heads(self.v_proj(inputs), batch_size)
        logits = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.depth)
        if use_causal_mask:
            t = inputs.shape[1]
            lower = torch.tril(torch.ones(t, t, device=inputs.device, dtype=logits.dtype))
            logits = logits + (1.0 - lower) * -1e9
        if mask is not None:
            keep = mask[:, None, None, :].to(logits.dtype)
            logits = logits + (1.0 - keep) * -1e9
        weights = torch.softmax(logits, dim=-1)
        weights = nn.functional.dropout(weights, p=self.rate, training=training)
        context = torch.matmul(weights, value).permute(0, 2, 1, 3)
        context = context.reshape(batch_size, -1, self.units)
        return self.o_proj(context)

    def forward(self, x, attention_mask=None, is_causal=False):
        return self.call(x, mask=attention_mask, training=self.training, use_causal_mask=is_causal)
