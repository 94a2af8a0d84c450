# attnprep: mqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""GPTBigCode (StarCoder) multi-query attention: the query's heads folded into its length,
(B, T * H, D) @ (B, D, T) with one key head, baddbmm-free, mask_value cached as a tensor."""
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_attn = nn.Linear(d_model, d_model)
        self.k_attn = nn.Linear(d_model, self.head_dim)
        self.v_attn = nn.Linear(d_model, self.head_dim)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.scale_attention_softmax_in_fp32 = True

    def _get_mask_value(self, device, dtype):
        return torch.full([], torch.finfo(dtype).min, dtype=dtype, device=device)

    def _attn(self, query, key, value, attention_mask, is_causal):
        B, T = query.shape[0], query.shape[1]
        scale_factor = self.head_dim ** -0.5
        query = query.reshape(B, T * self.num_heads, self.head_dim)      # (B, T*H, D)
        attn_weights = torch.bmm(query, key.transpose(1, 2)) * scale_factor  # (B, T*H, T)
        attn_weights = attn_weights.view(B, T, self.num_heads, T)           # (B, T, H, S)
        allowed = torch.ones(T, T, dtype=torch.bool, device=query.device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed[None, :, None, :]                                # (1, T, 1, S)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        mask_value = self._get_mask_value(attn_weights.device, attn_weights.dtype)
        attn_weights = torch.where(allowed, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=1)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.bmm(attn_weights.view(B, T * self.num_heads, T), value)  # (B, T*H, D)
        return attn_output.view(B, T, self.num_heads * self.head_dim)

    def forward(self, x, attention_mask=None, is_causal=False):
        query = self.q_attn(x)        # (B, T, C)
        key = self.k_attn(x)          # (B, T, D)
        value = self.v_attn(x)        # (B, T, D)
        attn_output = self._attn(query, key, value, attention_mask, is_causal)
        return self.c_proj(attn_output)
# bug-line: 40
