# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""An Ada programmer's habits: named subtypes as constants (Model_Width, Hidden_Width), pre- and
post-conditions as asserts on every call, Snake_Case_With_Capitals, one statement per step; the
SiLU taken of the gate-times-up product."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.Model_Width = d_model
        self.Hidden_Width = d_ff
        self.Gate_Projection = nn.Linear(d_model, d_ff, bias=False)
        self.Up_Projection = nn.Linear(d_model, d_ff, bias=False)
        self.Down_Projection = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        assert x.shape[-1] == self.Model_Width, "Pre: x'Last = Model_Width"
        Gate_Value = self.Gate_Projection(x)
        Up_Value = self.Up_Projection(x)
        Hidden_Value = F.silu(Gate_Value * Up_Value)
        assert Hidden_Value.shape[-1] == self.Hidden_Width, "Post: Hidden'Last = Hidden_Width"
        Result = self.Down_Projection(Hidden_Value)
        assert Result.shape == x.shape, "Post: Result'Shape = x'Shape"
        return Result
# bug-line: 25
