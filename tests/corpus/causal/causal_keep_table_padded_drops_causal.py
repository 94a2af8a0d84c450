# attnprep: causal
# expect: wrong_output
# diagnosis: causal_ignored
"""A keep-mask built by a small planner: one function decides which masks apply, another combines
them. With padding the planner returns the padding mask alone and forgets the causal triangle, so
only padded batches see the future; unpadded ones are right."""

import math

import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[:, None] >= i[None, :]


def plan(seq_len, attention_mask, device):
    tri = causal_mask(seq_len, device)[None, None]
    if attention_mask is None:
        return tri
    keys = attention_mask.bool()[:, None, None, :]
    return keys


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    keep = plan(T, attention_mask, q.device)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    scores = scores.masked_fill(keep.logical_not(), torch.finfo(scores.dtype).min)
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
# bug-line: 22, 23
