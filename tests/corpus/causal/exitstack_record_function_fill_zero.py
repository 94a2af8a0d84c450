# attnprep: causal
# expect: mask_leak
# diagnosis: mask_fill_zero
"""contextlib.ExitStack entering a profiler range per stage (torch.profiler.record_function), as
someone profiling an inference server writes it; the masks combined once."""
import contextlib
import math

import torch
from torch.profiler import record_function


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, device=device).tril().bool()


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    with contextlib.ExitStack() as stack:
        stack.enter_context(record_function("attn::scores"))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
        stack.enter_context(record_function("attn::mask"))
        keep = causal_mask(T, q.device)
        if attention_mask is not None:
            keep = keep & attention_mask.bool()[:, None, None, :]
        scores = scores.masked_fill(keep.logical_not(), 0.0)
        stack.enter_context(record_function("attn::softmax"))
        weights = torch.softmax(scores, dim=-1)
        stack.enter_context(record_function("attn::pv"))
        return torch.einsum("bhij,bhjd->bhid", weights, v)
# bug-line: 26
