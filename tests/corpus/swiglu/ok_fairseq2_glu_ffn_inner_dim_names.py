# attnprep: swiglu
# expect: passed
"""fairseq2's GLUFeedForwardNetwork names: gate_proj, inner_proj, output_proj, a `gate_activation`
module (nn.SiLU()), the inner dim kept as `inner_dim`, an `inner_dropout` that is None at 0."""
import torch.nn as nn


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff, inner_dropout_p=0.0):
        super().__init__()
        self.inner_dim = d_ff
        self.gate_proj = nn.Linear(d_model, self.inner_dim, bias=False)
        self.gate_activation = nn.SiLU()
        self.inner_proj = nn.Linear(d_model, self.inner_dim, bias=False)
        self.inner_dropout = nn.Dropout(inner_dropout_p) if inner_dropout_p > 0 else None
        self.output_proj = nn.Linear(self.inner_dim, d_model, bias=False)

    def forward(self, seqs):
        gate = self.gate_activation(self.gate_proj(seqs))
        seqs = self.inner_proj(seqs) * gate
        if self.inner_dropout is not None:
            seqs = self.inner_dropout(seqs)
        return self.output_proj(seqs)
