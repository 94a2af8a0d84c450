# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_bias_after_softmax + missing_scale
"""České komentáře (Czech comments and names), an Elixir-like pipe helper (pipe(x, f, g, h) applies
f, then g, then h) for every chain of steps; the bias subtracted from the probabilities after the
softmax, and the scores never scaled."""
import math

import torch


def pipe(value, *steps):
    for step in steps:
        value = step(value)
    return value


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))  # nejbližší nižší mocnina dvou
    sklony = [2 ** (-8 * i / n) for i in range(1, n + 1)]
    sklony += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]  # liché sklony 2n hlav
    return torch.tensor(sklony, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pozice = torch.arange(T, device=q.device)
    vzdalenost = (pozice[:, None] - pozice[None, :]).to(q.dtype)  # i - j
    sklony = alibi_slopes(H).to(q.device, q.dtype).view(H, 1, 1)
    povoleno = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        povoleno = povoleno & attention_mask[:, None, None, :]
    vahy = pipe(
        q @ k.transpose(-2, -1),
        lambda s: s.masked_fill(~povoleno, float("-inf")),
        lambda s: torch.softmax(s, dim=-1),
        lambda p: p - sklony * vzdalenost,
    )
    return vahy @ v  # (B, H, T, D)
# bug-line: 34, 37
