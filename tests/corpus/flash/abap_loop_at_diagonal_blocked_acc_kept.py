# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one + flash_acc_not_rescaled
"""An ABAP programmer's habits: DATA declarations at the top of each routine (lv_ locals, lt_
tables, ls_ structures), LOOP AT ... over a table of block starts, CHECK statements as early
continues; the causal test inside a block masks the diagonal too (j >= i), and the accumulator is
not rescaled when the running max grows."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    # DATA: lv_b, lv_h, lv_l, lv_d, lv_s, lt_q_starts, lt_k_starts, lv_scale
    lv_b, lv_h, lv_l, lv_d = q.shape
    lv_s = k.shape[2]
    lt_q_starts = list(range(0, lv_l, block_size))
    lt_k_starts = list(range(0, lv_s, block_size))
    lv_scale = 1.0 / math.sqrt(lv_d)
    lt_out = []
    for lv_q0 in lt_q_starts:  # LOOP AT lt_q_starts INTO lv_q0
        ls_q = q[:, :, lv_q0 : lv_q0 + block_size]
        lv_rows = ls_q.shape[2]
        ls_m = torch.full((lv_b, lv_h, lv_rows, 1), float("-inf"), dtype=q.dtype, device=q.device)
        ls_l = torch.zeros(lv_b, lv_h, lv_rows, 1, dtype=q.dtype, device=q.device)
        ls_acc = torch.zeros(lv_b, lv_h, lv_rows, lv_d, dtype=q.dtype, device=q.device)
        for lv_k0 in lt_k_starts:  # LOOP AT lt_k_starts INTO lv_k0
            if is_causal and lv_k0 > lv_q0 + lv_rows - 1:  # CHECK lv_k0 <= last row
                continue
            ls_k = k[:, :, lv_k0 : lv_k0 + block_size]
            ls_v = v[:, :, lv_k0 : lv_k0 + block_size]
            ls_s = (ls_q @ ls_k.transpose(-1, -2)) * lv_scale
            if is_causal:
                lt_i = torch.arange(lv_q0, lv_q0 + lv_rows, device=q.device)[:, None]
                lt_j = torch.arange(lv_k0, lv_k0 + ls_k.shape[2], device=q.device)[None, :]
                ls_s = ls_s.masked_fill(lt_j >= lt_i, float("-inf"))
            ls_m_new = torch.maximum(ls_m, ls_s.amax(-1, keepdim=True))
            ls_m_safe = torch.where(torch.isinf(ls_m_new), torch.zeros_like(ls_m_new), ls_m_new)
            ls_p = torch.exp(ls_s - ls_m_safe)
            lv_alpha = torch.exp(ls_m - ls_m_safe)
            ls_l = ls_l * lv_alpha + ls_p.sum(-1, keepdim=True)
            ls_acc = ls_acc + ls_p @ ls_v
            ls_m = ls_m_new
        lt_out.append(ls_acc / ls_l)  # APPEND ls_result TO lt_out
    return torch.cat(lt_out, dim=2)
# bug-line: 36, 42
