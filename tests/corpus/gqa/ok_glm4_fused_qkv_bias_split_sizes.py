# attnprep: gqa
# expect: passed
# GLM-4 / ChatGLM2's query_key_value: one fused Linear of (H + 2·KV)·D out features, split by sizes;
# multi_query_group_num naming; (T, B, ...) sequence-first inside like ChatGLM.
import math
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads_per_partition = num_heads
        self.multi_query_group_num = num_kv_heads
        self.hidden_size_per_attention_head = d_model // num_heads
        self.qkv_hidden_size = d_model + 2 * self.hidden_size_per_attention_head * num_kv_heads
        self.query_key_value = nn.Linear(d_model, self.qkv_hidden_size, bias=True)
        self.dense = nn.Linear(d_model, d_model, bias=True)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        hidden_states = hidden_states.transpose(0, 1)  # (T, B, C)
        T, B, C = hidden_states.shape
        hn, np_, g = self.hidden_size_per_attention_head, self.num_attention_heads_per_partition, self.multi_query_group_num
        mixed = self.query_key_value(hidden_states)
        q, k, v = mixed.split([np_ * hn, g * hn, g * hn], dim=-1)
        q = q.view(T, B, np_, hn)
        k = k.view(T, B, g, 1, hn).expand(T, B, g, np_ // g, hn).reshape(T, B, np_, hn)
        v = v.view(T, B, g, 1, hn).expand(T, B, g, np_ // g, hn).reshape(T, B, np_, hn)
        q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # (B, H, T, D)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hn)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=scores.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        scores = scores.masked_fill(~keep, float("-inf"))
        probs = self.attention_dropout(torch.softmax(scores.float(), dim=-1).type_as(scores))
        ctx = torch.matmul(probs, v).permute(2, 0, 1, 3).reshape(T, B, C)
        return self.dense(ctx).transpose(0, 1)
