# attnprep: mha_fused
# expect: mask_leak
# diagnosis: scale_d_model + padding_mask_on_queries
"""Segment Anything's image-encoder Attention (segment_anything/modeling/image_encoder.py): one
`qkv` Linear, reshape(B, N, 3, nH, -1).permute(2, 0, 3, 1, 4), the heads folded into the batch
with reshape(3, B * nH, N, -1).unbind(0), `attn = (q * self.scale) @ k.transpose(-2, -1)`, and the
output unfolded with view(B, nH, N, -1).permute(0, 2, 1, 3). Two slips: the scale is taken from the
whole width (dim ** -0.5), and the padding mask is laid on the query rows (it is unsqueezed on the
last axis)."""

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    """Multi-head Attention block with relative position embeddings (none here)."""

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.scale = d_model**-0.5
        self.qkv = nn.Linear(d_model, d_model * 3, bias=True)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask=None, is_causal: bool = False) -> torch.Tensor:
        B, N, _ = x.shape
        # qkv with shape (3, B, nHead, N, C)
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        # q, k, v with shape (B * nHead, N, C)
        q, k, v = qkv.reshape(3, B * self.num_heads, N, -1).unbind(0)

        attn = (q * self.scale) @ k.transpose(-2, -1)  # (B * nHead, N, N)
        attn = attn.view(B, self.num_heads, N, N)
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
        if is_causal:
            future = torch.ones(N, N, dtype=torch.bool, device=x.device).triu(1)
            attn = attn.masked_fill(future, float("-inf"))
        attn = attn.softmax(dim=-1).view(B * self.num_heads, N, N)
        x = (attn @ v).view(B, self.num_heads, N, -1).permute(0, 2, 1, 3).reshape(B, N, -1)
        x = self.proj(x)

        return x
# bug-line: 21, 35
