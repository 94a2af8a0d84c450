# attnprep: mha_fused
# expect: mask_leak
# diagnosis: masks_combined_or
"""flash-attn's qkvpacked API by hand: Wqkv -> (b, s, 3, h, d), flash_attn_qkvpacked_func(qkv, causal=...), key_padding_mask."""
import torch
import torch.nn as nn


def flash_attn_qkvpacked_func(qkv, softmax_scale=None, causal=False, key_padding_mask=None):
    """qkv: (batch, seqlen, 3, nheads, headdim); key_padding_mask: (batch, seqlen), True = keep."""
    q, k, v = qkv.unbind(dim=2)
    b, s, h, d = q.shape
    softmax_scale = softmax_scale or d ** -0.5
    scores = torch.einsum("bthd,bshd->bhts", q, k * softmax_scale)
    keep = None
    if causal:
        keep = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()[None, None]
    if key_padding_mask is not None:
        kp = key_padding_mask[:, None, None, :]
        keep = kp if keep is None else (keep | kp)
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.einsum("bhts,bshd->bthd", attn, v)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)  # Wqkv
        self.o_proj = nn.Linear(d_model, d_model)  # out_proj

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s, c = x.shape
        qkv = self.qkv_proj(x).view(b, s, 3, self.num_heads, c // self.num_heads)
        context = flash_attn_qkvpacked_func(qkv, causal=is_causal, key_padding_mask=attention_mask)
        return self.o_proj(context.reshape(b, s, c))
# bug-line: 20
