"""Generic properties of every attention module's reference solution (solutions/*.py), taken from the
registry (the exercises of kind ``attention_module``, each graded config): the `meta` device (no tensor
created without device=), the input dtype kept, eval() switching dropout off, gradients reaching every
parameter.

Each reference's independent cross-checks (torch's F.scaled_dot_product_attention, a second MLA in
DeepSeek's official einsum + complex-number style, its parameter contract) are in its own
tests/test_ex_<id>.py, written with tests/per_exercise.py's float64 helpers.
"""

from __future__ import annotations

import pytest
import torch

from per_exercise import (assert_close_graded, exercises_of, graded, inputs, one_thread, reference,  # noqa: F401
                          right_padding, seed_parameters)  # (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")

MODULES = [(ex, config) for ex in exercises_of("attention_module") for config in ex.grading["configs"]]
MODULE_IDS = [f"{ex.id}-{n}" for ex in exercises_of("attention_module") for n in range(len(ex.grading["configs"]))]
# the exercises whose constructor takes a dropout, with their first graded config
WITH_DROPOUT = [ex for ex in exercises_of("attention_module") if "dropout" in ex.contract.constructor]


def test_the_registry_has_attention_modules_with_and_without_dropout():
    assert len({ex.id for ex, _ in MODULES}) >= 5 and len(WITH_DROPOUT) >= 4


@pytest.mark.parametrize("ex, config", MODULES, ids=MODULE_IDS)
def test_runs_on_meta_device(ex, config):
    module = reference(ex, config).to("meta")
    d_model = config["d_model"]
    x = torch.empty(2, 5, d_model, device="meta")
    mask = torch.ones(2, 5, dtype=torch.bool, device="meta")
    for kwargs in ({}, {"attention_mask": mask}, {"is_causal": True}, {"attention_mask": mask, "is_causal": True}):
        out = module(x, **kwargs)
        assert out.device.type == "meta" and out.shape == (2, 5, d_model) and out.dtype == x.dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ex, config", MODULES, ids=MODULE_IDS)
def test_output_keeps_input_dtype(ex, config, dtype):
    module = reference(ex, config).to(dtype).eval()
    x = torch.randn(2, 5, config["d_model"]).to(dtype)
    out = module(x, attention_mask=right_padding(2, 5), is_causal=True)
    assert out.dtype == dtype and torch.isfinite(out).all()


@pytest.mark.parametrize("ex", WITH_DROPOUT, ids=[ex.id for ex in WITH_DROPOUT])
def test_dropout_is_off_in_eval_and_on_in_train(ex):
    config = ex.grading["configs"][0]
    noisy = seed_parameters(reference(ex, {**config, "dropout": 0.5}))
    clean = reference(ex, {**config, "dropout": 0.0}).to(torch.float64).eval()
    clean.load_state_dict(noisy.state_dict())
    x, mask = inputs(2, 8, config["d_model"], padding=True)
    first, second = noisy(x, mask, True), noisy(x, mask, True)
    assert torch.equal(first, second)
    assert_close_graded(first, clean(x, mask, True), mask)
    noisy.train()
    torch.manual_seed(0)
    trained = noisy(x, mask, True)
    assert (graded(trained, mask) - graded(first, mask)).abs().max() > 1e-3  # dropout is applied at all


@pytest.mark.parametrize("ex, config", MODULES, ids=MODULE_IDS)
def test_gradients_reach_every_parameter(ex, config):
    module = seed_parameters(reference(ex, config))
    x, mask = inputs(2, 5, config["d_model"], padding=True)
    out = module(x, attention_mask=mask, is_causal=True)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    (graded(out, mask) * graded(weights, mask)).sum().backward()
    for pname, p in module.named_parameters():
        assert p.grad is not None, f"{pname} got no gradient"
        assert torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, f"{pname} gradient is zero or not finite"
