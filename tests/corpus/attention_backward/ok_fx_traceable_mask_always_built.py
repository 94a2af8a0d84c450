# attnprep: attention_backward
# expect: passed
"""Written to stay torch.fx / torch.export traceable: no Python branch depends on a tensor, the causal
mask is always built and switched off by AND-ing with the flag, shapes are read with .size() once;
the softmax is recomputed (max-shifted) from q and k."""
import torch


def _probs(q, k, causal):
    L, S, D = q.size(-2), k.size(-2), q.size(-1)
    s = torch.matmul(q, k.transpose(-2, -1)) * (D ** -0.5)
    i = torch.arange(L, device=q.device).unsqueeze(-1)
    j = torch.arange(S, device=q.device).unsqueeze(0)
    blocked = (j > i) & causal
    s = torch.where(blocked, torch.full_like(s, float("-inf")), s)
    s = s - s.amax(dim=-1, keepdim=True)
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def attention_backward(q, k, v, dout, is_causal=False):
    causal = torch.tensor(bool(is_causal), device=q.device)
    p = _probs(q, k, causal)                                  # (B, H, L, S)
    dv = torch.matmul(p.transpose(-2, -1), dout)              # (B, H, S, D)
    dp = torch.matmul(dout, v.transpose(-2, -1))              # (B, H, L, S)
    ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))        # (B, H, L, S)
    scale = q.size(-1) ** -0.5
    dq = torch.matmul(ds, k) * scale                          # (B, H, L, D)
    dk = torch.matmul(ds.transpose(-2, -1), q) * scale        # (B, H, S, D)
    return dq, dk, dv
