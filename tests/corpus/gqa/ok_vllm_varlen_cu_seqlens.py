# attnprep: gqa
# expect: passed
"""Correct: the real tokens packed varlen-style with cu_seqlens, vLLM's ref_masked_attention per sequence, scattered back with index_put (padded rows left zero)."""
import torch
import torch.nn as nn


def ref_masked_attention(query, key, value, scale, attn_mask=None):
    """vLLM's tests/kernels reference: (tokens, heads, dim) per sequence."""
    attn_weights = scale * torch.einsum("qhd,khd->hqk", query, key).float()
    if attn_mask is not None:
        attn_weights = attn_weights + attn_mask.float()
    attn_weights = torch.softmax(attn_weights, dim=-1).to(value.dtype)
    return torch.einsum("hqk,khd->qhd", attn_weights, value)


class GroupedQueryAttention(nn.Module):
    """Real tokens packed varlen-style (cu_seqlens), each sequence attended on its own, scattered back."""

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.scale = self.head_size ** -0.5
        self.q_proj = nn.Linear(d_model, num_heads * self.head_size)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(num_heads * self.head_size, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        if attention_mask is None:
            attention_mask = torch.ones(B, T, dtype=torch.bool, device=x.device)
        flat_mask = attention_mask.reshape(-1)
        tokens = x.reshape(B * T, C)[flat_mask]                                   # (num_tokens, C)
        seq_lens = attention_mask.sum(-1)
        cu_seqlens = torch.cat([seq_lens.new_zeros(1), seq_lens.cumsum(0)]).tolist()
        q = self.q_proj(tokens).view(-1, self.num_heads, self.head_size)
        k = self.k_proj(tokens).view(-1, self.num_kv_heads, self.head_size)
        v = self.v_proj(tokens).view(-1, self.num_kv_heads, self.head_size)
        num_queries_per_kv = self.num_heads // self.num_kv_heads
        k = torch.repeat_interleave(k, num_queries_per_kv, dim=1)
        v = torch.repeat_interleave(v, num_queries_per_kv, dim=1)
        outs = []
        for i in range(B):
            s, e = cu_seqlens[i], cu_seqlens[i + 1]
            n = e - s
            attn_mask = None
            if is_causal:
                attn_mask = torch.triu(torch.ones(n, n, device=x.device, dtype=x.dtype), diagonal=1) * torch.finfo(x.dtype).min
            outs.append(ref_masked_attention(q[s:e], k[s:e], v[s:e], self.scale, attn_mask))
        packed = torch.cat(outs, dim=0).reshape(-1, self.num_heads * self.head_size)
        out = x.new_zeros(B * T, self.num_heads * self.head_size)
        out = out.index_put((flat_mask.nonzero(as_tuple=True)[0],), packed)
        return self.o_proj(out.view(B, T, -1))
