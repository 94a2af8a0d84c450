# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""Phi-4's attention naming (qkv_proj, op_size, scaling, attention_dropout as a float, Hugging Face's
additive finfo.min masks), commented in French."""
import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.attention_dropout = dropout
        op_size = num_heads * self.head_dim * 3  # q, k et v dans une seule projection
        self.qkv_proj = nn.Linear(d_model, op_size)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.scaling = self.head_dim**-0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.shape
        qkv = self.qkv_proj(x)
        # découpe par tête : chaque tête porte ses trois vecteurs côte à côte
        qkv = qkv.view(bsz, q_len, self.num_heads, 3, self.head_dim)
        query_states = qkv[..., 0, :].transpose(1, 2)  # (B, H, T, D)
        key_states = qkv[..., 1, :].transpose(1, 2)
        value_states = qkv[..., 2, :].transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        neg = torch.finfo(attn_weights.dtype).min
        if attention_mask is not None:
            # masque additif à la Hugging Face : 0 pour garder, min pour bloquer
            additive = torch.zeros(attention_mask.shape, dtype=attn_weights.dtype, device=x.device)
            additive = additive.masked_fill(~attention_mask, neg)
            attn_weights = attn_weights + additive[:, None, None, :]
        if is_causal:
            futur = torch.full((q_len, q_len), neg, dtype=attn_weights.dtype, device=x.device).triu(1)
            attn_weights = attn_weights + futur
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)  # (B, H, T, D)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
# bug-line: 25
