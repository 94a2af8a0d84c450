# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_bias_sign_flipped + padding_mask_inverted
"""Baichuan-13B's ALiBi: `_get_interleave` with its nested `_get_interleave_power_of_2` (start =
2 ** (-(2 ** -(log2(n) - 3)))), `_fill_with_neg_inf`, `_gen_alibi_mask` adding slope * key
position to a triu(-inf) future mask, the padding folded in with masked_fill."""
import math

import torch


def _fill_with_neg_inf(t):
    return t.float().fill_(float("-inf")).type_as(t)


def _get_interleave(n):
    def _get_interleave_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return _get_interleave_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (_get_interleave_power_of_2(closest_power_of_2)
            + _get_interleave(2 * closest_power_of_2)[0::2][: n - closest_power_of_2])


def alibi_slopes(num_heads):
    return torch.Tensor(_get_interleave(num_heads))


def _gen_alibi_mask(n_head, max_pos, device):
    slopes = alibi_slopes(n_head).to(device)
    alibi = -slopes.unsqueeze(1).unsqueeze(1) * torch.arange(max_pos, device=device).unsqueeze(0).unsqueeze(0).expand(n_head, -1, -1)
    alibi = alibi.view(n_head, 1, max_pos)
    alibi_mask = torch.triu(_fill_with_neg_inf(torch.zeros([max_pos, max_pos], device=device)), 1)
    return alibi_mask.unsqueeze(0) + alibi  # (H, T, T)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    mask = _gen_alibi_mask(H, T, q.device).to(q.dtype)[None]  # (1, H, T, T)
    if attention_mask is not None:
        mask = mask.masked_fill(attention_mask[:, None, None, :], float("-inf"))
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D) + mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 35, 45
