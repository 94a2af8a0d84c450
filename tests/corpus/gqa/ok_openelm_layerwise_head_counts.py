# attnprep: gqa
# expect: passed
"""Apple OpenELM's habits: head counts chosen per layer from a list (num_query_heads[layer_idx],
num_kv_heads[layer_idx]) by layer-wise scaling, here a one-layer list built from the constructor's
numbers; num_groups = query heads per KV head; separate projections named as in the contract;
the KV heads widened with the grouped expand + reshape."""
import math

import torch
import torch.nn as nn


def make_layerwise(value, num_layers=1):
    # OpenELM computes a schedule between two multipliers; with one layer it is the value itself
    return [value for _ in range(num_layers)]


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, layer_idx=0):
        super().__init__()
        num_query_heads = make_layerwise(num_heads)
        num_kv_list = make_layerwise(num_kv_heads)
        self.layer_idx = layer_idx
        self.num_q_heads = num_query_heads[layer_idx]
        self.num_k_heads = num_kv_list[layer_idx]
        self.num_groups = self.num_q_heads // self.num_k_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, self.num_q_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, self.num_k_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, self.num_k_heads * self.head_dim)
        self.o_proj = nn.Linear(self.num_q_heads * self.head_dim, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, seq_length, _ = x.shape
        queries = self.q_proj(x).reshape(batch_size, seq_length, self.num_q_heads, self.head_dim)
        keys = self.k_proj(x).reshape(batch_size, seq_length, self.num_k_heads, self.head_dim)
        values = self.v_proj(x).reshape(batch_size, seq_length, self.num_k_heads, self.head_dim)
        queries, keys, values = (t.transpose(1, 2) for t in (queries, keys, values))
        if self.num_groups != 1:
            shape = (batch_size, self.num_k_heads, self.num_groups, seq_length, self.head_dim)
            keys = keys[:, :, None].expand(shape).reshape(batch_size, self.num_q_heads, seq_length, self.head_dim)
            values = values[:, :, None].expand(shape).reshape(batch_size, self.num_q_heads, seq_length, self.head_dim)
        scores = torch.einsum("bhid,bhjd->bhij", queries, keys) / math.sqrt(self.head_dim)
        blocked = torch.zeros(batch_size, 1, seq_length, seq_length, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(seq_length, seq_length, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
        weights = self.dropout(scores.softmax(dim=-1))
        out = torch.einsum("bhij,bhjd->bhid", weights, values)
        return self.o_proj(out.transpose(1, 2).reshape(batch_size, seq_length, -1))
