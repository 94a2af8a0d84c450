# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries + causal_masks_diagonal
"""An abstract base class (abc.ABC) for attention layers with an abstractmethod that builds the additive
bias, a concrete subclass filling it in; comments in Korean, as a Seoul interview candidate writes."""
import abc
import math

import torch
import torch.nn as nn


class AttentionBase(nn.Module, abc.ABC):
    """공통 부분: 투영, 헤드 분할, 소프트맥스. 마스크 편향은 하위 클래스가 정한다."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    @abc.abstractmethod
    def attention_bias(self, scores, attention_mask, is_causal):
        """점수와 같은 모양의 덧셈 편향을 돌려준다."""

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        # (B, T, C) -> (B, H, T, D)
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores + self.attention_bias(scores, attention_mask, is_causal)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out)


class MultiHeadAttention(AttentionBase):
    def attention_bias(self, scores, attention_mask, is_causal):
        T = scores.shape[-1]
        bias = torch.zeros_like(scores)
        neg = torch.finfo(scores.dtype).min
        if attention_mask is not None:
            # 패딩 토큰(False)은 키로 쓰지 않는다
            bias = bias.masked_fill(~attention_mask[:, None, :, None], neg)
        if is_causal:
            # 미래 위치(j > i)를 가린다
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=0)
            bias = bias.masked_fill(future, neg)
        return bias
# bug-line: 50, 53
