# attnprep: mha_fused
# expect: passed
"""CodeGen-like fused attention with one model-parallel shard written generally: the fused output
reshaped (B, T, mp_num, 3 * local_dim) and split q, k, v inside each shard, heads by a reshape and a
permute, causal by torch.where on a bool buffer sliced to T."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, max_positions=2048):
        super().__init__()
        self.embed_dim, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.mp_num = 1
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_positions, max_positions, dtype=torch.bool)),
                             persistent=False)

    def _heads(self, t):
        B, T, _ = t.shape
        return t.reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        qkv = self.qkv_proj(x).reshape(B, T, self.mp_num, -1)
        local_dim = self.embed_dim // self.mp_num
        query, key, value = torch.split(qkv, local_dim, dim=-1)
        query, key, value = (self._heads(t.reshape(B, T, -1)) for t in (query, key, value))
        w = torch.matmul(query, key.transpose(-1, -2)) * self.head_dim ** -0.5
        neg = torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        if is_causal:
            w = torch.where(self.causal_mask[:T, :T], w, neg)
        if attention_mask is not None:
            w = torch.where(attention_mask[:, None, None, :], w, neg)
        w = self.attn_dropout(w.softmax(dim=-1))
        out = torch.matmul(w, value).permute(0, 2, 1, 3).reshape(B, T, self.embed_dim)
        return self.o_proj(out)
