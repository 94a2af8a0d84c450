# attnprep: cross_attention
# expect: passed
"""diffusers' Attention (Stable Diffusion's text conditioning): to_q / to_k / to_v and
to_out = [Linear, Dropout], heads folded into the batch, baddbmm with an additive -10000 mask."""

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        cross_attention_dim = d_context if d_context is not None else d_model
        self.heads = num_heads
        self.scale = (d_model // num_heads) ** -0.5
        self.to_q = nn.Linear(d_model, d_model)
        self.to_k = nn.Linear(cross_attention_dim, d_model)
        self.to_v = nn.Linear(cross_attention_dim, d_model)
        self.to_out = nn.ModuleList([nn.Linear(d_model, d_model), nn.Dropout(dropout)])

    def head_to_batch_dim(self, tensor):
        batch_size, seq_len, dim = tensor.shape
        tensor = tensor.reshape(batch_size, seq_len, self.heads, dim // self.heads)
        return tensor.permute(0, 2, 1, 3).reshape(batch_size * self.heads, seq_len, dim // self.heads)

    def batch_to_head_dim(self, tensor):
        batch_size, seq_len, dim = tensor.shape
        tensor = tensor.reshape(batch_size // self.heads, self.heads, seq_len, dim)
        return tensor.permute(0, 2, 1, 3).reshape(batch_size // self.heads, seq_len, dim * self.heads)

    def forward(self, hidden_states, encoder_hidden_states, attention_mask=None):
        B, T, _ = hidden_states.shape
        S = encoder_hidden_states.shape[1]
        query = self.head_to_batch_dim(self.to_q(hidden_states))  # (B*H, T, D)
        key = self.head_to_batch_dim(self.to_k(encoder_hidden_states))  # (B*H, S, D)
        value = self.head_to_batch_dim(self.to_v(encoder_hidden_states))
        if attention_mask is None:
            baddbmm_input = torch.empty(B * self.heads, T, S, dtype=query.dtype, device=query.device)
            beta = 0
        else:
            bias = (1 - attention_mask.to(query.dtype)) * -10000.0  # (B, S)
            baddbmm_input = bias.repeat_interleave(self.heads, dim=0)[:, None, :].expand(-1, T, -1)
            beta = 1
        attention_scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=beta, alpha=self.scale)
        attention_probs = attention_scores.softmax(dim=-1)
        hidden_states = self.batch_to_head_dim(torch.bmm(attention_probs, value))
        hidden_states = self.to_out[0](hidden_states)
        return self.to_out[1](hidden_states)
