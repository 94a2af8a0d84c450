# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""xformers' LowerTriangularMask re-created by hand as a small class with materialize(shape), the
way xformers.ops.fmha.attn_bias does; its materialize builds the -inf bias with triu(diagonal=2),
so every query also sees the next token."""

import math

import torch


class LowerTriangularMask:
    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        create_as = dtype if dtype is not torch.bfloat16 else torch.float32
        tensor = torch.full(shape, dtype=create_as, fill_value=float("-inf"), device=device)
        return torch.triu(tensor, diagonal=2).to(dtype)


def causal_mask(seq_len, device=None):
    return LowerTriangularMask().materialize((seq_len, seq_len), device=device) == 0


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    attn_bias = LowerTriangularMask().materialize((T, T), dtype=q.dtype, device=q.device)
    if attention_mask is not None:
        attn_bias = attn_bias + torch.zeros_like(attn_bias).masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    attn = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    attn = (attn + attn_bias).softmax(-1)
    return attn @ v
# bug-line: 17
