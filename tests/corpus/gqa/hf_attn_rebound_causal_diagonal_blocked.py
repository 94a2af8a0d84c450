# attnprep: gqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Hugging Face's eager attention: one name, attn (its attn_weights), carried through the stages (the scores,
then the scores plus the additive mask, then the probabilities); the causal mask built as a float
(T, T) of -inf above... and on the diagonal: torch.triu(..., diagonal=0) blocks each token from
itself. The first wrong values are the mask's, not the scores' that happen to share the name."""
import math

import torch
import torch.nn as nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.attention_dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if is_causal:
            causal_mask = torch.triu(torch.full((q_len, q_len), float("-inf"), device=x.device), diagonal=0)
            attn = attn + causal_mask.to(attn.dtype)
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = nn.functional.softmax(attn, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn = nn.functional.dropout(attn, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), attn
# bug-line: 45
