# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""mask filled from torch.tril_indices with index_put_; offset=1 lets each query see the next token."""
import math
import torch


def causal_mask(seq_len, device=None):
    m = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    r, c = torch.tril_indices(seq_len, seq_len, offset=1, device=device)
    m.index_put_((r, c), torch.tensor(True, device=device))
    return m


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    keep = causal_mask(T, device=q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~keep, float("-inf"))
    return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True)) @ v
# bug-line: 11
