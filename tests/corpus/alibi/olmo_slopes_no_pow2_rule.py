# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""OLMo's alibi_attention_bias: -|i - j| over (1, 1, T, T) in place (abs_().mul_(-1)), slopes
1 / 2^(m · 8 / H) for m = 1..H whatever H is; right for 4 or 8 heads, not for 6."""
import math
import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    m = torch.arange(1, num_heads + 1, dtype=torch.float)
    m.mul_(8.0 / num_heads)
    return 1.0 / torch.pow(2, m)


def alibi_attention_bias(seq_len: int, num_heads: int, device) -> torch.Tensor:
    alibi_bias = torch.arange(1 - seq_len, 1, dtype=torch.float, device=device).view(1, 1, 1, seq_len)
    alibi_bias = alibi_bias - torch.arange(1 - seq_len, 1, dtype=torch.float, device=device).view(1, 1, seq_len, 1)
    alibi_bias.abs_().mul_(-1)
    return alibi_bias * alibi_slopes(num_heads).to(device).view(1, num_heads, 1, 1)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    att = att + alibi_attention_bias(T, H, q.device).to(att.dtype)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), diagonal=1)
    att = att.masked_fill(causal, torch.finfo(att.dtype).min)
    if attention_mask is not None:
        att = att.masked_fill(~attention_mask[:, None, None, :], torch.finfo(att.dtype).min)
    return torch.softmax(att, dim=-1) @ v
# bug-line: 12
