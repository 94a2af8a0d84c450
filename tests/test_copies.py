"""grader/copies.py: the grader's copies of an attempt (its bfloat16 / float16 twin, the copy a
method like merged() is called on) carry the functions that close over the attempt along with it.
Round 8 of issue 24: correct attempts with a lambda forward hook or a table of lambdas reading
``self`` failed (a bfloat16 copy calling the float32 original's layers)."""

from __future__ import annotations

import torch
import torch.nn as nn

from attnprep.grader.copies import module_copy


class Steps(nn.Module):
    def __init__(self, outside):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = lambda y: y * 2.0
        self.paths = {"main": lambda x: self.lin(x), "nested": [lambda x: self.lin(x) + outside.sum()]}
        self.lin.register_forward_hook(lambda mod, args, out: out + self.lin.bias)

    def forward(self, x):
        return self.scale(self.paths["main"](x))


def test_lambdas_and_hooks_of_the_copy_use_the_copy():
    outside = torch.ones(3)
    original = Steps(outside)
    twin = module_copy(original).to(torch.bfloat16)
    x = torch.randn(2, 4, dtype=torch.bfloat16)
    out = twin(x)  # the float32 original's layers would raise on a bfloat16 input
    assert out.dtype == torch.bfloat16
    assert twin.paths["nested"][0](x).dtype == torch.bfloat16
    assert original.lin.weight.dtype == torch.float32  # the original is left as it was


def test_what_the_copy_did_not_copy_is_still_shared():
    outside = torch.ones(3)
    twin = module_copy(Steps(outside))
    cells = [c.cell_contents for c in twin.paths["nested"][0].__closure__]
    assert any(c is outside for c in cells)  # not part of the module: not copied, still the same object
    assert any(c is twin for c in cells)
