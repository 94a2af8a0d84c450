# attnprep: causal
# expect: mask_leak
# diagnosis: mask_dtype + padding_mask_inverted
"""An Excel VBA programmer's habits: `Dim` declarations as comments before each block, 1-based
`For i = 1 To n` loops (range(1, n + 1)) filling a worksheet-like grid of 1.0 / 0.0 cells, CamelCase
names, Const-style module values; the mask returned as that float grid, and the padding applied
where the tokens are real."""
import math

import torch

BLOCKED = float("-inf")  # Const BLOCKED = -Infinity


def causal_mask(seq_len, device=None):
    # Dim Grid(1 To n, 1 To n) As Double
    Grid = torch.zeros(seq_len, seq_len, device=device)
    for Row in range(1, seq_len + 1):  # For Row = 1 To n
        for Col in range(1, Row + 1):  # For Col = 1 To Row
            Grid[Row - 1, Col - 1] = 1.0
    return Grid


def causal_attention(q, k, v, attention_mask=None):
    # Dim SeqLen As Long, HeadDim As Long
    SeqLen, HeadDim = q.shape[-2], q.shape[-1]
    Scores = q @ k.transpose(-2, -1) / math.sqrt(HeadDim)
    Allowed = causal_mask(SeqLen, q.device)
    Scores = Scores.masked_fill(Allowed == 0, BLOCKED)
    If_has_padding = attention_mask is not None
    if If_has_padding:  # If Not AttentionMask Is Nothing Then
        Scores = Scores.masked_fill(attention_mask[:, None, None, :], BLOCKED)
    Weights = torch.softmax(Scores, dim=-1)
    return Weights @ v
# bug-line: 21, 32
