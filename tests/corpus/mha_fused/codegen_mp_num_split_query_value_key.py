# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""Salesforce CodeGen's attention, adapted to one fused projection: qkv split by `mp_num` model-parallel
shards (here one), _split_heads with a reshape to (B, T, H, D) then permute, CodeGen's own order of the
three chunks copied along, and _merge_heads."""
import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_attention_heads = num_heads
        self.head_dim = d_model // num_heads
        self.mp_num = 1
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.scale_attn = math.sqrt(self.head_dim)

    def _split_heads(self, x, n_head, dim_head, mp_num):
        reshaped = x.reshape(x.shape[:-1] + (n_head // mp_num, dim_head))
        reshaped = reshaped.reshape(x.shape[:-2] + (-1,) + reshaped.shape[-1:])
        return reshaped.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.embed_dim,))

    def forward(self, x, attention_mask=None, is_causal=False):
        qkv = self.qkv_proj(x)
        qkv_split = qkv.reshape(qkv.shape[:-1] + (self.mp_num, -1))
        local_dim = self.head_dim * self.num_attention_heads // self.mp_num
        query, value, key = torch.split(qkv_split, local_dim, dim=-1)

        query = self._split_heads(query, self.num_attention_heads, self.head_dim, self.mp_num)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, self.mp_num)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, self.mp_num)

        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / self.scale_attn
        mask_value = torch.finfo(attn_weights.dtype).min
        T = x.shape[1]
        if is_causal:
            causal_mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = torch.where(attention_mask[:, None, None, :], attn_weights, mask_value)
        attn_weights = nn.Softmax(dim=-1)(attn_weights)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = self._merge_heads(torch.matmul(attn_weights, value))
        return self.o_proj(attn_output)
# bug-line: 38
