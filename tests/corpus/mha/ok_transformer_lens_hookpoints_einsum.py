# attnprep: mha
# expect: passed
"""TransformerLens habits: identity HookPoint modules on every intermediate (hook_q, hook_attn_scores,
hook_pattern, hook_z, hook_result), its einsum letter names (batch, pos, head_index, d_head) and the
[batch, pos, head_index, d_head] layout kept until the output projection."""
import torch
import torch.nn as nn


class HookPoint(nn.Module):
    """An identity a hook can be attached to; it knows its own name."""

    def __init__(self):
        super().__init__()
        self.name = None

    def forward(self, x):
        return x


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.d_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_attn_scores = HookPoint()
        self.hook_pattern = HookPoint()
        self.hook_z = HookPoint()
        self.hook_result = HookPoint()
        for name, module in self.named_modules():
            if isinstance(module, HookPoint):
                module.name = name

    def forward(self, x, attention_mask=None, is_causal=False):
        batch, pos, d_model = x.shape
        q = self.hook_q(self.q_proj(x).view(batch, pos, self.n_heads, self.d_head))  # [batch, pos, head_index, d_head]
        k = self.hook_k(self.k_proj(x).view(batch, pos, self.n_heads, self.d_head))
        v = self.hook_v(self.v_proj(x).view(batch, pos, self.n_heads, self.d_head))
        attn_scores = torch.einsum("bqnh,bknh->bnqk", q, k) / self.d_head**0.5  # [batch, head_index, query_pos, key_pos]
        if is_causal:
            allowed = torch.ones(pos, pos, dtype=torch.bool, device=x.device).tril()
            attn_scores = attn_scores.masked_fill(~allowed, float("-inf"))
        if attention_mask is not None:
            attn_scores = attn_scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn_scores = self.hook_attn_scores(attn_scores)
        pattern = self.hook_pattern(self.attn_dropout(attn_scores.softmax(dim=-1)))
        z = self.hook_z(torch.einsum("bnqk,bknh->bqnh", pattern, v))  # [batch, pos, head_index, d_head]
        return self.hook_result(self.o_proj(z.reshape(batch, pos, d_model)))
