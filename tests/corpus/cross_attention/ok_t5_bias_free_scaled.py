# attnprep: cross_attention
# expect: passed
"""Correct, with the contract's scale T5 leaves out: T5's EncDecAttention: q / k / v / o without bias, shape() / unshape() closures, a zero
position_bias (no relative attention bias in a cross-attention layer) to which the extended mask
is added, softmax in float32 then type_as."""
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.n_heads = num_heads
        self.key_value_proj_dim = d_model // num_heads
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.has_relative_attention_bias = False
        self.q = nn.Linear(d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(d_context, self.inner_dim, bias=False)
        self.v = nn.Linear(d_context, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, d_model, bias=False)
        self.dropout = dropout

    def forward(self, x, context, context_mask=None):
        batch_size, seq_length = x.shape[:2]
        key_length = context.shape[1]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(x))           # (B, H, T, D)
        key_states = shape(self.k(context))       # (B, H, S, D)
        value_states = shape(self.v(context))     # (B, H, S, D)

        scores = torch.matmul(query_states, key_states.transpose(3, 2)) / self.key_value_proj_dim ** 0.5
        position_bias = torch.zeros((1, self.n_heads, seq_length, key_length),
                                    device=scores.device, dtype=scores.dtype)
        if context_mask is not None:
            extended = (1.0 - context_mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
            position_bias = position_bias + extended
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        return self.o(attn_output)
