# attnprep: alibi
# expect: passed
"""Correct, as ofirpress's fairseq branch builds it: the slopes from get_slopes, a key-position bias
slopes · arange(T) of shape (H, 1, T) added to fill_with_neg_inf(zeros).triu(1), the future mask,
and the padding as -inf on the key columns; (B*H) bmm like fairseq's MultiheadAttention."""

import math

import torch


def fill_with_neg_inf(t):
    return t.float().fill_(float("-inf")).type_as(t)


def alibi_slopes(num_heads):
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(num_heads).is_integer():
        return torch.Tensor(get_slopes_power_of_2(num_heads))
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    first = get_slopes_power_of_2(closest_power_of_2)
    rest = alibi_slopes(2 * closest_power_of_2).tolist()[0::2][: num_heads - closest_power_of_2]
    return torch.Tensor(first + rest)


def alibi_attention(q, k, v, attention_mask=None):
    bsz, attn_heads, tgt_len, head_dim = q.shape
    maxpos = tgt_len
    slopes = alibi_slopes(attn_heads).to(q.device)
    alibi = slopes.unsqueeze(1).unsqueeze(1) * torch.arange(maxpos, device=q.device).unsqueeze(0).unsqueeze(0).expand(attn_heads, -1, -1)
    future_mask = torch.triu(fill_with_neg_inf(torch.zeros([maxpos, maxpos], device=q.device)), 1)
    future_mask = future_mask.unsqueeze(0) + alibi  # (H, T, T)
    q = q.reshape(bsz * attn_heads, tgt_len, head_dim) * head_dim**-0.5
    k = k.reshape(bsz * attn_heads, tgt_len, head_dim)
    attn_weights = torch.bmm(q, k.transpose(1, 2))  # (B*H, T, T)
    attn_weights = attn_weights.view(bsz, attn_heads, tgt_len, tgt_len) + future_mask.unsqueeze(0)
    if attention_mask is not None:
        key_padding_mask = ~attention_mask
        attn_weights = attn_weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2), float("-inf"))
    attn_probs = torch.softmax(attn_weights.float(), dim=-1).type_as(attn_weights)
    return torch.matmul(attn_probs, v)
