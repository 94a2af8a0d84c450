# attnprep: mha
# expect: passed
# 手撕 MHA（参考 nlp-tutorial 的写法）
import math
import numpy as np
import torch
import torch.nn as nn


class ScaledDotProductAttention(nn.Module):
    def __init__(self):
        super(ScaledDotProductAttention, self).__init__()

    def forward(self, Q, K, V, attn_mask):
        d_k = Q.size(-1)
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)  # scores : [batch_size x n_heads x len_q x len_k]
        scores.masked_fill_(attn_mask, -1e9)  # Fills elements of self tensor with value where mask is one.
        attn = nn.Softmax(dim=-1)(scores)
        context = torch.matmul(attn, V)
        return context, attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        self.d_model, self.n_heads = d_model, num_heads
        self.d_k = self.d_v = d_model // num_heads
        self.W_Q = nn.Linear(d_model, self.d_k * num_heads)
        self.W_K = nn.Linear(d_model, self.d_k * num_heads)
        self.W_V = nn.Linear(d_model, self.d_v * num_heads)
        self.linear = nn.Linear(num_heads * self.d_v, d_model)
        self.sdpa = ScaledDotProductAttention()

    def forward(self, x, attention_mask=None, is_causal=False):
        Q, K, V = x, x, x
        batch_size, len_q = Q.size(0), Q.size(1)
        q_s = self.W_Q(Q).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)  # q_s: [batch_size x n_heads x len_q x d_k]
        k_s = self.W_K(K).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        v_s = self.W_V(V).view(batch_size, -1, self.n_heads, self.d_v).transpose(1, 2)
        # pad mask: True 表示要遮住
        attn_mask = torch.zeros(batch_size, 1, len_q, len_q, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            attn_mask = attn_mask | (~attention_mask).unsqueeze(1).unsqueeze(2)
        if is_causal:
            subsequence_mask = np.triu(np.ones((len_q, len_q)), k=1)
            subsequence_mask = torch.from_numpy(subsequence_mask).byte().to(x.device).bool()
            attn_mask = attn_mask | subsequence_mask
        attn_mask = attn_mask.repeat(1, self.n_heads, 1, 1)
        context, attn = self.sdpa(q_s, k_s, v_s, attn_mask)
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, self.n_heads * self.d_v)
        output = self.linear(context)
        return output
