# attnprep: mha
# expect: passed
# A dataclass nn.Module (Flax habit): fields first, layers made in __post_init__.
from dataclasses import dataclass
import math
import torch
from torch import nn


@dataclass(eq=False)
class MultiHeadAttention(nn.Module):
    d_model: int
    num_heads: int
    dropout: float = 0.0

    def __post_init__(self):
        super().__init__()
        self.head_dim = self.d_model // self.num_heads
        self.q_proj = nn.Linear(self.d_model, self.d_model)
        self.k_proj = nn.Linear(self.d_model, self.d_model)
        self.v_proj = nn.Linear(self.d_model, self.d_model)
        self.o_proj = nn.Linear(self.d_model, self.d_model)
        self.attn_dropout = nn.Dropout(self.dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        heads = lambda y: y.reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        att = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        if is_causal:
            i = torch.arange(T, device=x.device)
            att = att.masked_fill(i[None, :] > i[:, None], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = torch.einsum("bhij,bhjd->bihd", att, v).reshape(B, T, C)
        return self.o_proj(y)
