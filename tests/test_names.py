"""Issue 24: what the grader names on attempts it has not seen, object by object and case group by
case group, and never a wrong name (the corpus files below state their names in their headers; these
tests look at what the names rest on)."""

from __future__ import annotations

from pathlib import Path

import torch

from attnprep.grader import weights

CORPUS = Path(__file__).parent / "corpus"


def test_a_bare_1d_gain_is_a_layer_and_a_bare_bias_is_not():
    class Bare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = torch.nn.Parameter(torch.zeros(6, 4))
            self.bq = torch.nn.Parameter(torch.zeros(6))  # wq's bias
            self.g_q = torch.nn.Parameter(torch.ones(6))  # a norm's gain

    layers, _ = weights.layers_of(Bare())
    assert {(l.name, l.weight) for l in layers if len(l.weight) == 1} == {("g_q", (6,))}
    role = weights.Role("q_norm", "rmsnorm", (6,), None)
    mappings, why = weights.candidates([role], layers)
    assert why is None and mappings[0].layers == {"q_norm": "g_q"}


def test_each_object_is_named_from_its_own_outputs(graded):
    result = graded(CORPUS / "norms" / "rms_no_upcast_ln_unbiased.py")
    shown = {d.id: d.evidence[0] for d in result.diagnoses}
    assert set(shown) == {"norm_no_upcast", "norm_unbiased_variance"}
    assert all(e.key == "evidence.object_apart" for e in shown.values())
    assert shown["norm_no_upcast"].params["output"] == "RMSNorm"
    assert shown["norm_unbiased_variance"].params["output"] == "LayerNorm"


def test_query_rows_masked_with_a_second_mistake_is_not_called_padding_ignored(graded):
    for path in (CORPUS / "mha" / "qwen2_query_rows_scale_dmodel.py", CORPUS / "mha" / "neox_query_rows_no_causal.py",
                 CORPUS / "causal" / "mask_ok_attn_missing_scale_query_rows.py"):
        ids = [d.id for d in graded(path).diagnoses]
        assert "padding_mask_on_queries" in ids and "padding_mask_ignored" not in ids and "masks_ignored" not in ids, (path, ids)
