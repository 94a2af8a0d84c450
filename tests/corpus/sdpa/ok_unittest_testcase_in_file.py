# attnprep: sdpa
# expect: passed
"""A test-first file: the two functions, then a unittest.TestCase with the writer's own checks
(row sums, a large-logit row, -inf entries, a bool mask against an additive one, the causal
corner) that runs only under `python -m unittest`, never on import."""
import math
import unittest

import torch


def softmax(x, dim=-1):
    m = torch.amax(x, dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        bias = bias.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=query.device).tril(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    weights = softmax(query @ key.transpose(-2, -1) * factor + bias, dim=-1)
    return weights @ value


class SoftmaxTests(unittest.TestCase):
    def test_rows_sum_to_one(self):
        p = softmax(torch.randn(3, 5))
        self.assertTrue(torch.allclose(p.sum(-1), torch.ones(3)))

    def test_large_logits(self):
        p = softmax(torch.tensor([[1e4, 0.0, -1e4]]))
        self.assertTrue(torch.isfinite(p).all())

    def test_neg_inf(self):
        p = softmax(torch.tensor([[0.0, float("-inf")]]))
        self.assertEqual(p[0, 1].item(), 0.0)


class AttentionTests(unittest.TestCase):
    def test_bool_equals_additive(self):
        q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 8)
        m = torch.rand(4, 6) > 0.3
        m[:, 0] = True
        add = torch.zeros(4, 6).masked_fill(~m, float("-inf"))
        a = scaled_dot_product_attention(q, k, v, attn_mask=m)
        b = scaled_dot_product_attention(q, k, v, attn_mask=add)
        self.assertTrue(torch.allclose(a, b))


if __name__ == "__main__":
    unittest.main()
