# attnprep: alibi
# expect: passed
"""Correct, Hugging Face's additive float masks: the causal and padding masks as (1 - allowed) ·
finfo.min, added with the ALiBi bias -slope·(i - j) built from log2 exponents; type hints."""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor


def alibi_slopes(num_heads: int) -> Tensor:
    n = 2 ** int(math.log2(num_heads))
    exponents = torch.arange(1, n + 1, dtype=torch.float64) * (8.0 / n)
    slopes = torch.pow(2.0, -exponents)
    if n < num_heads:
        extra = torch.arange(1, 2 * (num_heads - n), 2, dtype=torch.float64) * (4.0 / n)
        slopes = torch.cat([slopes, torch.pow(2.0, -extra)])
    return slopes.float()


def alibi_attention(q: Tensor, k: Tensor, v: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
    bsz, n_heads, seq_len, head_dim = q.shape
    attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)
    pos = torch.arange(seq_len, device=q.device, dtype=q.dtype)
    alibi = -(pos[:, None] - pos[None, :]).abs() * alibi_slopes(n_heads).to(q)[:, None, None]
    allowed = torch.ones(seq_len, seq_len, device=q.device).tril()[None, None]
    if attention_mask is not None:
        allowed = allowed * attention_mask[:, None, None, :].to(q.dtype)
    min_dtype = torch.finfo(q.dtype).min
    causal_mask = (1.0 - allowed) * min_dtype
    attn_weights = attn_weights + alibi + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, v)
