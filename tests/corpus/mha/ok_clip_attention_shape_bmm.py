# attnprep: mha
# expect: passed
"""CLIPAttention's habits (transformers' modeling_clip): embed_dim / scale = head_dim**-0.5, a
_shape helper, queries scaled before the product, heads flattened into the batch for bmm
(bsz * num_heads, tgt_len, head_dim), an additive mask built once."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim**-0.5
        self.dropout = dropout
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, embed_dim = x.size()
        query_states = self.q_proj(x) * self.scale
        key_states = self._shape(self.k_proj(x), -1, bsz)
        value_states = self._shape(self.v_proj(x), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))  # (bsz*H, tgt, src)
        bias = torch.zeros(bsz, 1, tgt_len, src_len, dtype=x.dtype, device=x.device)
        neg = torch.finfo(x.dtype).min
        if is_causal:
            causal = torch.ones(tgt_len, src_len, dtype=torch.bool, device=x.device).tril()
            bias = bias.masked_fill(~causal, neg)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], neg)
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + bias
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, embed_dim)
        return self.o_proj(attn_output)
