# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block + flash_causal_off_by_one
"""JAX `lax.scan` habits in torch: a pure `body(carry, xs) -> (carry, None)` folded over the key
blocks by a small `scan()` helper, the carry a tuple (m, l, o), `jnp.where`-style masking through
torch.where. Two slips: the output carry is kept normalised after every block (o = o_old·α + p·v,
then divided by the new l, never multiplied back by the old l), and the diagonal tile masks
`col >= row`, so every query loses its own key."""

import math

import torch


def scan(body, carry, xs):
    for x in xs:
        carry, _ = body(carry, x)
    return carry, None


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    sm_scale = 1.0 / math.sqrt(D)
    outs = []
    for start_q in range(0, L, block_size):
        q_blk = q[..., start_q:start_q + block_size, :] * sm_scale
        n_q = q_blk.shape[-2]
        rows = torch.arange(start_q, start_q + n_q, device=q.device)[:, None]
        stop = min(S, start_q + n_q) if is_causal else S
        starts = list(range(0, stop, block_size))

        def body(carry, start_k):
            m, l, o = carry
            k_blk = k[..., start_k:start_k + block_size, :]
            v_blk = v[..., start_k:start_k + block_size, :]
            s = q_blk @ k_blk.transpose(-1, -2)
            if is_causal:
                cols = torch.arange(start_k, start_k + k_blk.shape[-2], device=q.device)[None, :]
                s = torch.where(cols >= rows, torch.full_like(s, -math.inf), s)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l_new = alpha * l + p.sum(-1, keepdim=True)
            o_new = (alpha * o + p @ v_blk) / l_new
            return (m_new, l_new, o_new), None

        init = (q_blk.new_full((B, H, n_q, 1), -math.inf), q_blk.new_zeros(B, H, n_q, 1), q_blk.new_zeros(B, H, n_q, D))
        (m, l, o), _ = scan(body, init, starts)
        outs.append(o)
    return torch.cat(outs, dim=-2)
# bug-line: 40, 45
