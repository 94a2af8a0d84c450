# attnprep: causal
# expect: passed
"""Correct: xformers-style bias objects (LowerTriangularMask, a padding bias) materialised and added; causal_mask is the bias == 0."""
import math
import torch


class LowerTriangularMask:
    """xformers-style attention bias: materialize() gives the additive bias, -inf above the diagonal."""

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        create_as = dtype if dtype is not torch.bfloat16 else torch.float32
        tensor = torch.full(shape, dtype=create_as, fill_value=float("-inf"), device=device)
        return torch.triu(tensor, diagonal=1).to(dtype)


class PaddingKeys:
    def __init__(self, keep):
        self.keep = keep  # (B, T) bool

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        bias = torch.zeros(self.keep.shape, dtype=dtype, device=device).masked_fill(~self.keep, float("-inf"))
        return bias[:, None, None, :].expand(shape[0], 1, shape[-2], shape[-1])


def causal_mask(seq_len, device=None):
    return LowerTriangularMask().materialize((seq_len, seq_len), device=device) == 0


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    biases = [LowerTriangularMask()]
    if attention_mask is not None:
        biases.append(PaddingKeys(attention_mask))
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    for b in biases:
        s = s + b.materialize((B, 1, T, T) if isinstance(b, PaddingKeys) else (T, T), dtype=s.dtype, device=s.device)
    return torch.softmax(s, dim=-1) @ v
