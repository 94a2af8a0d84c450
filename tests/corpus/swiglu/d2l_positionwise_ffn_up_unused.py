# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_gate_missing
"""d2l.ai's PositionWiseFFN (dense1 / activation / dense2, "the same MLP at every position") grown
into a SwiGLU: dense1 the gate, dense3 the up projection, dense2 the down one, bias=False, a
`ffn_num_hiddens` name for d_ff. forward keeps d2l's one-line shape and never multiplies by the up
branch: dense2(silu(dense1(X)))."""

from torch import nn


class SwiGLU(nn.Module):
    """The positionwise feed-forward network, gated."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        ffn_num_hiddens = d_ff
        self.dense1 = nn.Linear(d_model, ffn_num_hiddens, bias=False)
        self.dense3 = nn.Linear(d_model, ffn_num_hiddens, bias=False)
        self.activation = nn.SiLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, d_model, bias=False)

    def forward(self, X):
        return self.dense2(self.activation(self.dense1(X)))
# bug-line: 24
