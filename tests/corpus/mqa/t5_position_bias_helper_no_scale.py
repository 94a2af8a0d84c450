# attnprep: mqa
# expect: wrong_output
# diagnosis: missing_scale
"""T5's habits kept in a multi-query layer: a `position_bias` that starts as zeros and collects the
masks, added to the scores, and the scores from a small helper shared by nothing else. T5 folds its
scale into the initialisation of q, so the helper takes no 1/sqrt(head_dim): here, with the default
init, the scale is simply missing."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_scores(q, k):
    return torch.matmul(q, k.transpose(3, 2))


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.key_value_proj_dim = num_heads, d_model // num_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, self.key_value_proj_dim)
        self.v = nn.Linear(d_model, self.key_value_proj_dim)
        self.o = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, seq_length, inner_dim = x.shape
        q = self.q(x).view(batch_size, seq_length, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        k = self.k(x)[:, None]  # (B, 1, T, D): one head for all
        v = self.v(x)[:, None]
        position_bias = torch.zeros(1, 1, seq_length, seq_length, device=x.device, dtype=q.dtype)
        if attention_mask is not None:
            position_bias = position_bias.masked_fill(~attention_mask[:, None, None, :], torch.finfo(q.dtype).min)
        if is_causal:
            ahead = torch.ones(seq_length, seq_length, dtype=torch.bool, device=x.device).triu(1)
            position_bias = position_bias.masked_fill(ahead, torch.finfo(q.dtype).min)
        scores = compute_scores(q, k)
        scores += position_bias
        attn_weights = F.dropout(F.softmax(scores.float(), dim=-1).type_as(scores), p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).reshape(batch_size, -1, inner_dim)
        return self.o(attn_output)
# bug-line: 39
