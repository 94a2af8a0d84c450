# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_bias_sign_flipped
"""A class decorator that stamps settings onto a class (@with_settings(bias_sign=..., fill=...)),
read as class attributes by static methods; the bias sign was stamped +1, so far keys are favoured."""
import math

import torch


def with_settings(**settings):
    def stamp(cls):
        for name, value in settings.items():
            setattr(cls, name.upper(), value)
        return cls
    return stamp


@with_settings(bias_sign=+1, fill=float("-inf"))
class ALiBi:
    @staticmethod
    def slopes(num_heads):
        n = 2 ** math.floor(math.log2(num_heads))
        out = [2 ** (-8 * i / n) for i in range(1, n + 1)]
        out += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
        return torch.tensor(out, dtype=torch.float32)

    @staticmethod
    def bias(num_heads, T, device, dtype):
        pos = torch.arange(T, device=device)
        dist = (pos[:, None] - pos[None, :]).to(dtype)
        return ALiBi.BIAS_SIGN * ALiBi.slopes(num_heads).to(device=device, dtype=dtype)[:, None, None] * dist


def alibi_slopes(num_heads):
    return ALiBi.slopes(num_heads)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D) + ALiBi.bias(H, T, q.device, q.dtype)
    ok = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, None, :]
    return s.masked_fill(~ok, ALiBi.FILL).softmax(dim=-1) @ v
# bug-line: 19
