# attnprep: mqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""A Groovy programmer's habits: `with { }` closures (an object handed to a closure as `it`), a
list of masks built with `<<` and applied with `each { }`, class-level constants for the fill and
the causal mask's diagonal offset; the offset chosen 0, so each query's own key is masked too."""
import torch
import torch.nn as nn


def with_(obj, closure):  # obj.with { it -> ... }
    return closure(obj)


def each(items, closure, init):  # items.inject(init) { acc, it -> ... }
    acc = init
    for it in items:
        acc = closure(acc, it)
    return acc


class MultiQueryAttention(nn.Module):
    FUTURE_DIAGONAL = 0
    FILL = float("-inf")

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = with_(self.q_proj(x), lambda it: it.view(B, T, H, D).transpose(1, 2))  # (B, H, T, D)
        k = with_(self.k_proj(x), lambda it: it.unsqueeze(1))  # (B, 1, T, D)
        v = with_(self.v_proj(x), lambda it: it.unsqueeze(1))
        scores = q @ k.transpose(-2, -1) * D ** -0.5
        masks = []
        if attention_mask is not None:
            masks.append(~attention_mask[:, None, None, :])  # masks << ~attention_mask
        if is_causal:
            masks.append(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(self.FUTURE_DIAGONAL))
        scores = each(masks, lambda acc, it: acc.masked_fill(it, self.FILL), scores)
        out = with_(scores.softmax(-1) @ v, lambda it: it.transpose(1, 2).reshape(B, T, C))
        return self.o_proj(out)
# bug-line: 23
