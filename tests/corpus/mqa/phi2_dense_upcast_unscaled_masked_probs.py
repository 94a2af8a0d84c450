# attnprep: mqa
# expect: mask_leak
# diagnosis: missing_scale + mask_after_softmax
"""Phi-2 (PhiAttention) habits: q_proj / k_proj / v_proj / dense, attention in float32 under
softmax_scale, the result cast back with .to(value_states.dtype), one shared key/value head."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.hidden_size = d_model
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(d_model, self.head_dim, bias=True)
        self.v_proj = nn.Linear(d_model, self.head_dim, bias=True)
        self.dense = nn.Linear(num_heads * self.head_dim, d_model, bias=True)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        query_states = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(x).view(bsz, q_len, 1, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(x).view(bsz, q_len, 1, self.head_dim).transpose(1, 2)

        attn_weights = torch.matmul(query_states.to(torch.float32), key_states.to(torch.float32).transpose(2, 3))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        keep = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = torch.tril(keep)
        keep = keep[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        attn_weights = attn_weights.masked_fill(~keep, 0.0)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)        # (B, H, T, D), one kv head broadcast
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.dense(attn_output)
# bug-line: 28, 36
