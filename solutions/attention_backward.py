"""Attention's backward pass by hand: the gradients of sum(out * dout) with respect to q, k and v,
for out = softmax(q kᵀ / sqrt(D) [+ causal mask]) v, as autograd computes them (and as
FlashAttention's backward kernel does, without the tiles).

Forward, per batch and head: S = q kᵀ · scale, P = softmax(S) row by row, out = P v.
Backward, with dout = ∂L/∂out:
    dv = Pᵀ dout                        (S, D): each key's value collects the weights its queries gave it
    dP = dout vᵀ                        (L, S)
    dS = P ⊙ (dP - rowsum(dP ⊙ P))      (L, S): the softmax's Jacobian diag(p) - p pᵀ, row by row
    dq = dS k · scale,  dk = dSᵀ q · scale
rowsum(dP ⊙ P) equals rowsum(dout ⊙ out) (FlashAttention-2's D), because out = P v. The
probabilities are recomputed from q and k; a masked entry has P = 0, so its dS is 0 and no
gradient flows through it.
"""

import math

import torch


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False) -> torch.Tensor:
    """The forward pass whose gradients attention_backward computes (autograd of it grades them)."""
    L, S, D = q.size(-2), k.size(-2), q.size(-1)
    att = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, L, S)
    if is_causal:  # top-left: query i sees keys 0..i
        allowed = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()  # (L, S)
        att = att.masked_fill(~allowed, float("-inf"))
    return torch.softmax(att, dim=-1) @ v  # (B, H, L, D)


def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dout: torch.Tensor,
                       is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv): the gradients of sum(attention(q, k, v, is_causal) * dout), by hand."""
    L, S, D = q.size(-2), k.size(-2), q.size(-1)
    scale = 1.0 / math.sqrt(D)
    scores = q @ k.transpose(-2, -1) * scale  # (B, H, L, S): recomputed, as FlashAttention's backward does
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()  # (L, S): True where key j <= query i
        scores = scores.masked_fill(~keep, float("-inf"))  # (B, H, L, S): masked keys get P = 0
    probs = torch.softmax(scores, dim=-1)  # (B, H, L, S): P, each row sums to 1
    dv = probs.transpose(-2, -1) @ dout  # (B, H, S, D): Pᵀ dout
    dprobs = dout @ v.transpose(-2, -1)  # (B, H, L, S): dP = dout vᵀ
    row = (dprobs * probs).sum(dim=-1, keepdim=True)  # (B, H, L, 1): rowsum(dP ⊙ P) = rowsum(dout ⊙ out)
    dscores = probs * (dprobs - row)  # (B, H, L, S): dS, the softmax backward
    dscores = dscores * scale  # (B, H, L, S): the chain rule through scores = q kᵀ · scale
    dq = dscores @ k  # (B, H, L, D): dS k
    dk = dscores.transpose(-2, -1) @ q  # (B, H, S, D): dSᵀ q
    return dq, dk, dv
