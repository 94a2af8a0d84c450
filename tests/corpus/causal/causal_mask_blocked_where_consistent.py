# attnprep: causal
# expect: wrong_output
# diagnosis: causal_mask_inverted
"""nn.Transformer habit: causal_mask gives the future positions (True = masked), and the attention
fills exactly those with torch.where: the attention output is right, the mask the contract asks for
is inverted."""
import math

import torch


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx.unsqueeze(0) > idx.unsqueeze(1)


def causal_attention(q, k, v, attention_mask=None):
    d_k = q.size(-1)
    att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d_k))
    att = torch.where(causal_mask(q.size(-2), q.device), float("-inf"), att)
    if attention_mask is not None:
        att = att.masked_fill(attention_mask.logical_not()[:, None, None, :], float("-inf"))
    return torch.matmul(torch.softmax(att, dim=-1), v)
# bug-line: 14
