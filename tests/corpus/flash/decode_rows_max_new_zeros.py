# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""vLLM-style decode loop: one query token at a time, keys read page by page; the running max is a
0-d tensor started at 0 (q.new_zeros(())) instead of -inf, so a row whose logits all lie far below
0 sums to 0."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    batch, heads, q_len, head_dim = q.shape
    kv_len = k.shape[2]
    out = torch.zeros_like(q)
    for bh in range(batch * heads):
        b, h = divmod(bh, heads)
        for t in range(q_len):
            query = q[b, h, t] / math.sqrt(head_dim)
            run_max = q.new_zeros(())
            run_sum = q.new_zeros(())
            run_out = q.new_zeros(head_dim)
            last = min(t + 1, kv_len) if is_causal else kv_len
            for page in range(0, last, block_size):
                keys = k[b, h, page:min(page + block_size, last)]
                vals = v[b, h, page:min(page + block_size, last)]
                logits = torch.einsum("d,nd->n", query, keys)
                new_max = torch.maximum(run_max, logits.amax())
                weights = (logits - new_max).exp()
                decay = (run_max - new_max).exp()
                run_sum = decay * run_sum + weights.sum()
                run_out = decay * run_out + torch.einsum("n,nd->d", weights, vals)
                run_max = new_max
            out[b, h, t] = run_out / run_sum
    return out
# bug-line: 20
