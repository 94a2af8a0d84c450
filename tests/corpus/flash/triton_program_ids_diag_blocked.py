# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""A Triton kernel's body in torch: program ids over (query block, batch * head), BLOCK_M / BLOCK_N, offs_m / offs_n, lse kept."""
import torch


def _fwd_kernel(Q, K, V, Out, sm_scale, IS_CAUSAL, BLOCK_M, BLOCK_N, start_m, off_hz):
    N_CTX = Q.shape[1]
    offs_m = start_m * BLOCK_M + torch.arange(BLOCK_M, device=Q.device)
    offs_m = offs_m[offs_m < N_CTX]
    q = Q[off_hz, offs_m].float()
    m_i = torch.full((offs_m.numel(),), float("-inf"), device=Q.device)
    l_i = torch.zeros(offs_m.numel(), device=Q.device)
    acc = torch.zeros(offs_m.numel(), Q.shape[-1], device=Q.device)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp2 instead of exp
    hi = min((start_m + 1) * BLOCK_M, K.shape[1]) if IS_CAUSAL else K.shape[1]
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + torch.arange(BLOCK_N, device=Q.device)
        offs_n = offs_n[offs_n < K.shape[1]]
        k = K[off_hz, offs_n].float()
        qk = q @ k.T
        if IS_CAUSAL:
            qk = torch.where(offs_m[:, None] > offs_n[None, :], qk, float("-inf"))
        m_ij = torch.maximum(m_i, qk.amax(1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = torch.exp2(qk)
        l_ij = p.sum(1)
        alpha = torch.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None] + p @ V[off_hz, offs_n].float()
        m_i = m_ij
    Out[off_hz, offs_m] = (acc / l_i[:, None]).to(Out.dtype)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    Q, K, V = q.reshape(B * H, L, D), k.reshape(B * H, -1, D), v.reshape(B * H, -1, D)
    Out = torch.empty_like(Q)
    for start_m in range(-(-L // block_size)):  # grid axis 0
        for off_hz in range(B * H):  # grid axis 1
            _fwd_kernel(Q, K, V, Out, D ** -0.5, is_causal, block_size, block_size, start_m, off_hz)
    return Out.reshape(B, H, L, D)
# bug-line: 24
