# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""batch and heads flattened for bmm; dk from dS instead of dS^T."""
import torch


def attention_backward(q, k, v, dout, is_causal=False):
    B, H, L, D = q.shape
    S = k.shape[2]
    Q, K, V, dO = (t.reshape(B * H, -1, D) for t in (q, k, v, dout))
    s = torch.bmm(Q, K.transpose(1, 2)) * D ** -0.5
    allowed = torch.ones(L, S, dtype=torch.bool, device=q.device)
    if is_causal:
        allowed = allowed.tril()
    s_max = torch.where(allowed, s, torch.tensor(float("-inf"), device=s.device, dtype=s.dtype)).amax(-1, keepdim=True)
    e = torch.where(allowed, torch.exp(s - s_max), torch.zeros_like(s))
    P = e / e.sum(-1, keepdim=True)
    dV = torch.bmm(P.transpose(1, 2), dO)
    dP = torch.bmm(dO, V.transpose(1, 2))
    dS = P * (dP - (P * dP).sum(-1, keepdim=True)) * D ** -0.5
    dQ = torch.bmm(dS, K)
    dK = torch.bmm(dS, Q)
    return dQ.view(B, H, L, D), dK.view(B, H, S, D), dV.view(B, H, S, D)
# bug-line: 23
