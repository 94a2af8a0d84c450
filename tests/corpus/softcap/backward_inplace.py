# attnprep: softcap
# expect: wrong_output
# diagnosis: backward_inplace
"""A hand-written softmax that divides in place: right outputs, but backward() raises."""
import math

import torch
import torch.nn.functional as F


def softcap_causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool (seq_len, seq_len): True where attention is allowed, i.e. key j <= query i."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))  # (T, T)


def softcap_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softcap: float, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(softcap · tanh(q·kᵀ / sqrt(D) / softcap) + causal and padding masks)·v, (B, H, T, D).

    attention_mask: optional bool (B, T), True = real token; padded keys get zero attention.
    """
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    scores = softcap * torch.tanh(scores / softcap)  # (B, H, T, T), each score in (-softcap, softcap)
    allowed = softcap_causal_mask(T, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (T, T) & (B, 1, 1, T) -> (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    attn /= attn.sum(dim=-1, keepdim=True)  # (B, H, T, T), each row sums to 1 over the keys
    return attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
