"""The observer's count of masked_fill results nothing used, and the per-mask fills of the variants."""

from __future__ import annotations

import torch

from attnprep.grader import variants
from attnprep.grader.observe import Observer


def _run(body, after=lambda: None):
    observer = Observer(4, 4)
    with observer, torch.no_grad():
        body()
    after()
    return observer.obs.discarded_fills


def test_a_bare_masked_fill_is_counted_and_an_assigned_one_is_not():
    scores, mask = torch.randn(2, 4, 4), torch.rand(4, 4) > 0.5

    def bare():
        scores.masked_fill(mask, float("-inf"))
        scores.softmax(-1)

    def assigned():
        s = scores.masked_fill(mask, float("-inf"))
        s.softmax(-1)

    def as_bias():  # the fill builds a bias that baddbmm takes: used
        bias = torch.zeros(2, 4, 4).masked_fill(mask, float("-inf"))
        torch.baddbmm(bias, scores, scores, beta=0)

    kept = []

    def returned():  # still alive when the observer exits (the attempt's output): not counted
        kept.append(scores.masked_fill(mask, 0.0))

    assert _run(returned, after=kept.clear) == 0  # freed only after the observer exited
    assert _run(bare) == 1
    assert _run(assigned) == 0
    assert _run(as_bias) == 0


def test_mask_fills_differ_where_one_mask_blocks_a_whole_row():
    T = 3
    scores = torch.zeros(1, 1, T, T)
    pad = torch.tensor([True, False, False])[None, None, None, :].expand(1, 1, T, T)  # key 0 padded
    causal = ~torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]
    row0 = {f: f.apply(scores, pad, causal)[0, 0, 0].softmax(-1) for f in variants.MASK_FILLS}
    # row 0 sees only key 0, which the padding blocks: -1e9 for the padding and -inf for the
    # future gives key 0 everything; the other way round, the two future keys share it
    padding_soft = variants.MaskFills(-1e9, float("-inf"))
    causal_soft = variants.MaskFills(float("-inf"), -1e9)
    assert torch.allclose(row0[padding_soft], torch.tensor([1.0, 0.0, 0.0]))
    assert torch.allclose(row0[causal_soft], torch.tensor([0.0, 0.5, 0.5]))
    # added finfo.min: key 0 blocked once, keys 1 and 2 blocked once each too: uniform
    assert torch.allclose(row0[variants.MaskFills(None, None, "added")], torch.full((3,), 1 / 3))
