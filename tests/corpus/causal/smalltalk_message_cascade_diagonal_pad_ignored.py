# attnprep: causal
# expect: mask_leak
# diagnosis: causal_masks_diagonal + padding_mask_ignored
"""A Smalltalk programmer's message passing: a tiny Matrix-like wrapper whose methods read as
keyword messages (`lowerTriangleIncludingDiagonal_`, `maskWith_`, `softmaxAlong_`) and return a new
receiver; the mask built with the diagonal excluded (strict lower triangle), and the padding mask
sent to a message that answers the receiver unchanged when its argument is a tensor."""
import math

import torch


class Receiver:
    def __init__(self, tensor):
        self.value = tensor

    def lowerTriangleIncludingDiagonal_(self, flag):
        n = self.value.shape[-1]
        ones = torch.ones(n, n, dtype=torch.bool, device=self.value.device)
        return Receiver(torch.tril(ones, diagonal=0 if flag else -1))

    def maskWith_(self, allowed):
        return Receiver(self.value.masked_fill(~allowed, float("-inf")))

    def keyMaskWith_(self, keyMask):
        if keyMask is None or isinstance(keyMask, torch.Tensor):
            return self
        return Receiver(self.value.masked_fill(~keyMask[:, None, None, :], float("-inf")))

    def softmaxAlong_(self, dim):
        return Receiver(torch.softmax(self.value, dim=dim))


def causal_mask(seq_len, device=None):
    blank = Receiver(torch.empty(seq_len, seq_len, device=device))
    return blank.lowerTriangleIncludingDiagonal_(False).value


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    scores = Receiver(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    probs = scores.maskWith_(allowed).keyMaskWith_(attention_mask).softmaxAlong_(-1)
    return probs.value @ v
# bug-line: 26, 36
