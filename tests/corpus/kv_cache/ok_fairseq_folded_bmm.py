# attnprep: kv_cache
# expect: passed
"""fairseq-style incremental state: q pre-scaled, heads folded into the batch for torch.bmm,
prev_key / prev_value kept (B, KV, S, D) and returned in that order, the mask offset by the past."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, cache=None):
        bsz, tgt_len, embed_dim = query.size()
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(query).view(bsz, tgt_len, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(query).view(bsz, tgt_len, self.kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        saved_state = {"prev_key": k, "prev_value": v}
        src_len = k.size(2)
        rep = self.num_heads // self.kv_heads
        q = q.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2).reshape(-1, tgt_len, self.head_dim)
        k = k.repeat_interleave(rep, dim=1).reshape(-1, src_len, self.head_dim)
        v = v.repeat_interleave(rep, dim=1).reshape(-1, src_len, self.head_dim)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        future = torch.triu(torch.ones(tgt_len, src_len, dtype=torch.bool, device=query.device),
                            diagonal=src_len - tgt_len + 1)
        attn_probs = F.softmax(attn_weights.masked_fill(future, float("-inf")), dim=-1)
        attn = torch.bmm(attn_probs, v).view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn = attn.transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn), (saved_state["prev_key"], saved_state["prev_value"])
