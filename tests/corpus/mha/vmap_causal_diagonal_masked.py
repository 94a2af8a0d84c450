# attnprep: mha
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""torch.vmap per head; the causal tril(-1) masks the diagonal too."""
import math
import torch
from torch import nn


def one_head(q, k, v, keep):
    # q, k, v: (T, D); keep: (T, T) bool
    s = q @ k.T / math.sqrt(q.shape[-1])
    s = torch.where(keep, s, torch.full_like(s, -1e9))
    return torch.softmax(s, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x: torch.Tensor, attention_mask=None, is_causal: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        H = self.num_heads
        split = lambda t: t.view(B, T, H, C // H).transpose(1, 2)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        keep = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril(-1)
        per_head = torch.vmap(one_head, in_dims=(0, 0, 0, None))            # over H
        per_batch = torch.vmap(per_head, in_dims=(0, 0, 0, 0))             # over B
        out = per_batch(q, k, v, keep)                                      # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).flatten(2))
# bug-line: 32
