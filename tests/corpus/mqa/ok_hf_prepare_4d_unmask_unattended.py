# attnprep: mqa
# expect: passed
"""Correct: Hugging Face's 4-D mask preparation verbatim (padding found where causal + mask == 0, masked_fill on a slice of a clone) and _unmask_unattended's fully masked rows set to 0."""
import torch
from torch import nn


def _prepare_4d_causal_attention_mask(attention_mask, sequence_length, dtype, device, batch_size, is_causal):
    """Hugging Face's _prepare_4d_causal_attention_mask_with_cache_position, cache-free."""
    min_dtype = torch.finfo(dtype).min
    causal_mask = torch.full((sequence_length, sequence_length), fill_value=min_dtype if is_causal else 0.0, dtype=dtype, device=device)
    if is_causal:
        causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
    if attention_mask is not None:
        causal_mask = causal_mask.clone()  # copy to contiguous memory for in-place edit
        mask_length = attention_mask.shape[-1]
        padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :].to(dtype)
        padding_mask = padding_mask == 0
        causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
        # a fully masked row (a left-padded query) attends everywhere instead of NaN
        causal_mask = causal_mask.mul(~torch.all(causal_mask == min_dtype, dim=-1, keepdim=True))
    return causal_mask


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = dropout

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        bsz, q_len, _ = hidden_states.shape
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, 1, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, 1, self.head_dim).transpose(1, 2)
        key_states = key_states.expand(bsz, self.num_heads, q_len, self.head_dim)
        value_states = value_states.expand(bsz, self.num_heads, q_len, self.head_dim)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / self.head_dim ** 0.5
        mask = _prepare_4d_causal_attention_mask(attention_mask, q_len, attn_weights.dtype, hidden_states.device, bsz, is_causal)
        attn_weights = attn_weights + mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        return self.o_proj(attn_output.reshape(bsz, q_len, -1)), attn_weights
