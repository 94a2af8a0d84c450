# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed + alibi_bias_sign_flipped
"""Two of ALiBi's own slips in a loop over heads: the slopes taken from the last head first, and the
bias added as +slope·(i - j) (distant keys favoured). The slopes function itself is right."""

import math

import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    def pow2(n):
        start = 2 ** (-8 / n)
        return [start ** i for i in range(1, n + 1)]

    if math.log2(num_heads).is_integer():
        return torch.tensor(pow2(num_heads), dtype=torch.float32)
    n = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(pow2(n) + pow2(2 * n)[0::2][: num_heads - n], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).flip(0).to(q.device)  # 倒过来了
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    keep = j <= i
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    outs = []
    for h in range(H):
        s = q[:, h] @ k[:, h].transpose(-2, -1) / math.sqrt(D)  # (B, T, T)
        s = s + slopes[h] * (i - j)  # 符号反了
        s = s.masked_fill(~keep[:, 0] if keep.dim() == 4 else ~keep, float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ v[:, h])
    return torch.stack(outs, dim=1)
# bug-line: 25, 34
