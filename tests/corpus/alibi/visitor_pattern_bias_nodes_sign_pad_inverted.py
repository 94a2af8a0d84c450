# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_bias_sign_flipped + padding_mask_inverted
"""The visitor pattern: the score's terms are nodes (Product, DistanceBias, CausalMask, KeyMask)
and a ScoreVisitor with one visit_* method per node class folds them into the scores; the distance
bias adds +slope * (i - j), and the key mask node keeps the padded keys."""
import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** int(math.floor(math.log2(num_heads)))
    out = [2 ** (-8 * i / n) for i in range(1, n + 1)]
    out += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(out, dtype=torch.float32)


class Product:
    def __init__(self, q, k):
        self.q, self.k = q, k


class DistanceBias:
    def __init__(self, slopes, T):
        self.slopes, self.T = slopes, T


class CausalMask:
    def __init__(self, T):
        self.T = T


class KeyMask:
    def __init__(self, mask):
        self.mask = mask


class ScoreVisitor:
    def visit(self, node, scores):
        return getattr(self, "visit_" + type(node).__name__)(node, scores)

    def visit_Product(self, node, scores):
        return node.q @ node.k.transpose(-2, -1) / math.sqrt(node.q.shape[-1])

    def visit_DistanceBias(self, node, scores):
        i = torch.arange(node.T, device=scores.device)
        dist = (i[:, None] - i[None, :]).to(scores.dtype)
        return scores + node.slopes.to(scores.device, scores.dtype)[:, None, None] * dist

    def visit_CausalMask(self, node, scores):
        i = torch.arange(node.T, device=scores.device)
        return scores.masked_fill(i[None, :] > i[:, None], float("-inf"))

    def visit_KeyMask(self, node, scores):
        if node.mask is None:
            return scores
        return scores.masked_fill(node.mask[:, None, None, :], float("-inf"))


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    nodes = [Product(q, k), DistanceBias(alibi_slopes(H), T), CausalMask(T), KeyMask(attention_mask)]
    visitor = ScoreVisitor()
    scores = None
    for node in nodes:
        scores = visitor.visit(node, scores)
    return scores.softmax(dim=-1) @ v
# bug-line: 49, 58
