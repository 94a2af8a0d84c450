# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""A Composer / MosaicML-style module whose settings are class attributes (`softmax_scale_per_head`,
`qk_ln`), the scale picked by a conditional expression on a setting, Wqkv as three Linear layers
under Mosaic's names, masks applied with torch.where."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    softmax_scale_per_head = False
    qk_ln = False

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model, self.n_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.Wq = nn.Linear(d_model, d_model)
        self.Wk = nn.Linear(d_model, d_model)
        self.Wv = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s, _ = x.shape
        q = self.Wq(x).view(b, s, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.Wk(x).view(b, s, self.n_heads, self.head_dim).permute(0, 2, 3, 1)
        v = self.Wv(x).view(b, s, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        softmax_scale = self.head_dim ** -0.5 if self.softmax_scale_per_head else self.d_model ** -0.5
        attn_weight = q.matmul(k) * softmax_scale
        neg = torch.finfo(attn_weight.dtype).min
        if attention_mask is not None:
            attn_weight = torch.where(attention_mask[:, None, None, :], attn_weight, neg)
        if is_causal:
            keep = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            attn_weight = torch.where(keep, attn_weight, neg)
        attn_weight = self.attn_dropout(torch.softmax(attn_weight, dim=-1))
        out = attn_weight.matmul(v).permute(0, 2, 1, 3).reshape(b, s, self.d_model)
        return self.out_proj(out)
# bug-line: 12
