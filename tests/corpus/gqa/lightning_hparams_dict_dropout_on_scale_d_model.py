# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_d_model + dropout_in_eval
"""PyTorch-Lightning habits inside a plain module: save_hyperparameters-like `self.hparams` dict read
everywhere, `attn_pdrop` from the hparams, F.dropout called with training=True "because it is only
used while training", repeat_kv by index_select on a group index."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.hparams = dict(n_embd=d_model, n_head=num_heads, n_kv_head=num_kv_heads, attn_pdrop=dropout)
        hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * hd)
        self.k_proj = nn.Linear(d_model, num_kv_heads * hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * hd)
        self.o_proj = nn.Linear(num_heads * hd, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        hp = self.hparams
        B, T, C = x.shape
        H, G = hp["n_head"], hp["n_kv_head"]
        D = C // H
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        group_of = torch.arange(H, device=x.device) // (H // G)
        k, v = k.index_select(1, group_of), v.index_select(1, group_of)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hp["n_embd"]))
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        att = F.dropout(F.softmax(att, dim=-1), p=hp["attn_pdrop"], training=True)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
# bug-line: 34, 39
