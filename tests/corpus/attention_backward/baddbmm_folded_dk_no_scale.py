# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed + backward_scale_missing
"""Megatron-style: batch and heads folded into one axis, scores by baddbmm on an empty tensor with
beta=0 and alpha=scale, every gradient a bmm. dK forgets dSᵀ and the chain rule's scale is dropped."""
import math
import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[-2]
    q3, k3, v3, do3 = (t.reshape(B * H, -1, t.shape[-1]) for t in (q, k, v, dout))
    norm_factor = math.sqrt(D)
    scores = torch.baddbmm(torch.empty(B * H, L, S, dtype=q.dtype, device=q.device),
                           q3, k3.transpose(1, 2), beta=0.0, alpha=1.0 / norm_factor)
    if is_causal:
        scores.masked_fill_(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), -10000.0)
    probs = torch.softmax(scores, dim=-1)
    dv = torch.bmm(probs.transpose(1, 2), do3)
    dprobs = torch.bmm(do3, v3.transpose(1, 2))
    dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
    dq = torch.bmm(dscores, k3)
    dk = torch.bmm(dscores, q3)
    return dq.view(B, H, L, D), dk.view(B, H, S, D), dv.view(B, H, S, -1)
# bug-line: 23, 24
