# attnprep: mha_fused
# expect: passed
"""Correct: BLOOM's names (query_key_value, dense, inv_norm_factor) with the contract's [q; k; v] layout: baddbmm into a zero position bias, finfo.min fill, softmax in float32."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    """BLOOM-ish names (query_key_value / dense) but the contract's [q; k; v] layout; baddbmm into a preallocated score buffer."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.inv_norm_factor = 1.0 / self.head_dim ** 0.5
        self.beta = 1.0
        self.query_key_value = nn.Linear(d_model, 3 * d_model, bias=True)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        fused = self.query_key_value(x)
        query_layer, key_layer, value_layer = fused.split(self.hidden_size, dim=2)
        def to_bh(t):
            return t.view(bsz, q_len, self.num_heads, self.head_dim).permute(0, 2, 1, 3).reshape(bsz * self.num_heads, q_len, self.head_dim)
        query_layer, key_layer, value_layer = map(to_bh, (query_layer, key_layer, value_layer))
        alibi_like = torch.zeros(bsz * self.num_heads, 1, q_len, dtype=x.dtype, device=x.device)  # no position bias
        matmul_result = alibi_like.baddbmm(batch1=query_layer, batch2=key_layer.transpose(-1, -2), beta=self.beta, alpha=self.inv_norm_factor)
        scores = matmul_result.view(bsz, self.num_heads, q_len, q_len)
        blocked = torch.zeros(bsz, 1, q_len, q_len, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(diagonal=1)
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores.float(), dim=-1).to(x.dtype)
        probs = self.attention_dropout(probs)
        ctx = torch.bmm(probs.view(bsz * self.num_heads, q_len, q_len), value_layer)
        ctx = ctx.view(bsz, self.num_heads, q_len, self.head_dim).permute(0, 2, 1, 3).reshape(bsz, q_len, self.hidden_size)
        return self.dense(ctx)
