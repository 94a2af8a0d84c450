# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""Heavy docstrings with the math written out (LaTeX-like, as a thesis appendix reads), the softmax
temperature worked out by a module-level helper that is handed both widths by name."""
import torch
import torch.nn as nn


def attention_scale(head_dim, d_model):
    r"""The logit scale :math:`\tau = 1/\sqrt{d_k}`.

    For :math:`q, k \sim \mathcal{N}(0, I_{d_k})`, :math:`\mathrm{Var}[q^\top k] = d_k`, so
    :math:`q^\top k / \sqrt{d_k}` has unit variance and the softmax stays away from saturation.
    """
    return d_model ** -0.5


class MultiQueryAttention(nn.Module):
    r"""Multi-query attention (Shazeer, 2019): :math:`H` query heads, one shared key / value head.

    .. math:: \mathrm{head}_h = \mathrm{softmax}\big(\tau\, Q_h K^\top + M\big) V
    """

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        head_dim = d_model // num_heads
        self.h, self.d_k = num_heads, head_dim
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, head_dim)
        self.v_proj = nn.Linear(d_model, head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.tau = attention_scale(head_dim, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        r""":math:`X \in \mathbb{R}^{B \times T \times d}` to the same shape; :math:`M_{ij} = -\infty`
        where key :math:`j` is padding or (causal) :math:`j > i`."""
        B, T, _ = x.shape
        Q = self.q_proj(x).view(B, T, self.h, self.d_k).transpose(1, 2)   # (B, H, T, d_k)
        K = self.k_proj(x).unsqueeze(1)                                    # (B, 1, T, d_k)
        V = self.v_proj(x).unsqueeze(1)                                    # (B, 1, T, d_k)
        logits = self.tau * (Q @ K.transpose(-2, -1))                      # (B, H, T, T)
        if is_causal:
            M = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            logits = logits.masked_fill(M, float("-inf"))
        if attention_mask is not None:
            logits = logits.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        A = self.drop(logits.softmax(-1))
        return self.o_proj((A @ V).transpose(1, 2).reshape(B, T, -1))
# bug-line: 16
