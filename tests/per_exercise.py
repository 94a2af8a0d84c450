"""What the shared tests read from each exercise's own files instead of a table with a row per exercise.

Adding an exercise adds its rows beside it, never to a shared test; a shared test that finds no row
of a new exercise uses what it can derive (the first attempt that fails with a named mistake) or its
defaults.

- ``tests/corpus/<id>/examples.toml`` (optional) says what the shared tests take from the corpus
  beyond the files' headers: its top-level keys name one attempt for a purpose (``benchmark``,
  ``zh_report``); each table holds rows ``"<attempt file>" = <expected>`` for one shared test,
  named in a comment above it (the line where the attempt first goes wrong, the case its heat-map
  shows, …).
- ``tests/test_ex_<id>.py`` may declare a constant a shared test reads (``MUTATION``: how its
  reference is mutated, for tests/test_mutation.py).
"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

from attnprep import exercises
from attnprep.exercises import render_stub

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"
# The top-level keys of examples.toml: which attempt stands for the exercise in the `fail-<id>` row of
# benchmarks/bench_check.py, and in tests/test_zh_reports.py.
PURPOSES = {"benchmark", "zh_report"}


def examples(exercise_id: str) -> dict:
    """The exercise's ``examples.toml`` as a dict (empty when it has none)."""
    path = CORPUS / exercise_id / "examples.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def first_failing(exercise_id: str) -> str:
    """The exercise's first corpus attempt, by file name, that fails with a named mistake."""
    for path in sorted((CORPUS / exercise_id).glob("*.py")):
        head = path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]
        expect = next((line.split(":", 1)[1].strip() for line in head if line.startswith("# expect:")), "passed")
        if expect != "passed" and any(re.match(r"# diagnosis: \w+", line) for line in head):
            return path.name
    raise LookupError(f"no failing corpus attempt of {exercise_id} that names a mistake")


def chosen(exercise_id: str, key: str) -> str:
    """The attempt ``examples.toml`` names under ``key``, else :func:`first_failing`."""
    return examples(exercise_id).get(key) or first_failing(exercise_id)


def rows(table: str) -> list[tuple]:
    """Every registered exercise's rows of ``[table]``, in registry order, as
    ``("<id>/<attempt file>", *expected)`` (a list value is spread into several)."""
    found = []
    for exercise_id in exercises.registry():
        for attempt, expected in examples(exercise_id).get(table, {}).items():
            found.append((f"{exercise_id}/{attempt}", *(expected if isinstance(expected, list) else [expected])))
    if not found:  # a misspelt table would parametrize a test with nothing, silently
        raise LookupError(f"no exercise's examples.toml has a [{table}] table")
    return found


def declared(name: str, default=None) -> dict[str, object]:
    """Every registered exercise's constant ``name`` from its tests/test_ex_<id>.py, or ``default``
    when it has no such module or constant: exercise id -> value, in registry order."""
    found = {}
    for exercise_id in exercises.registry():
        module = None
        if (TESTS / f"test_ex_{exercise_id}.py").is_file():
            module = importlib.import_module(f"test_ex_{exercise_id}")
        found[exercise_id] = getattr(module, name, default)
    return found


# --- what the contracts (``CONTRACT`` in tests/test_ex_<id>.py) are written with ---------------------


def linear(name: str, fan_in: int, fan_out: int, bias: bool = True) -> dict[str, tuple[int, ...]]:
    """The parameter shapes of ``nn.Linear(fan_in, fan_out)`` named ``name``."""
    shapes = {f"{name}.weight": (fan_out, fan_in)}
    if bias:
        shapes[f"{name}.bias"] = (fan_out,)
    return shapes


def grouped_params(a: dict) -> dict[str, tuple[int, ...]]:
    """Grouped-query attention's projections, with or without a cache: K and V with num_kv_heads heads."""
    d, kv = a["d_model"], a["num_kv_heads"] * (a["d_model"] // a["num_heads"])
    return {**linear("q_proj", d, d), **linear("k_proj", d, kv), **linear("v_proj", d, kv), **linear("o_proj", d, d)}


def latent_params(a: dict) -> dict[str, tuple[int, ...]]:
    """DeepSeek's MLA layers, no biases (the latent attention, with or without a cache)."""
    d, h, ql, kvl = a["d_model"], a["num_heads"], a["q_lora_rank"], a["kv_lora_rank"]
    nope, rotary, v = a["qk_nope_head_dim"], a["qk_rope_head_dim"], a["v_head_dim"]
    return {**linear("wq_a", d, ql, bias=False), "q_norm.weight": (ql,), **linear("wq_b", ql, h * (nope + rotary), bias=False),
            **linear("wkv_a", d, kvl + rotary, bias=False), "kv_norm.weight": (kvl,),
            **linear("wkv_b", kvl, h * (nope + v), bias=False), **linear("wo", h * v, d, bias=False)}


# --- the stubs ---------------------------------------------------------------------------------------


def needs_solution_regions(ex) -> None:
    """Skip when the stub copies ready-made helpers from a reference solution that is not there yet."""
    if "solution_region(" in ex.stub_template.read_text(encoding="utf-8") and not ex.solution_path.exists():
        pytest.skip(f"{ex.solution_path.name} (source of the stub's ready-made helpers) does not exist yet")


def exec_stub(ex) -> dict:
    """The exercise's rendered stub, executed: its top-level names."""
    needs_solution_regions(ex)
    namespace = {"__name__": f"attnprep_stub_{ex.id}"}
    exec(compile(render_stub(ex), f"{ex.id}.py", "exec"), namespace)  # our own template, not user code
    return namespace


# --- an exercise's mistakes as edits of its reference (tests/test_ex_<id>.py of the edited kinds) ----


def same(case, got, want) -> bool:
    """Equal within the case's tolerance everywhere, NaN where the other is NaN."""
    import torch

    from attnprep.grader.judge import close

    got, want = got.double(), want.double()
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    return close(got, want, torch.ones_like(got, dtype=torch.bool), equal_nan=True, tolerance=case.tolerance)


def variant_outputs(kind, ci: int, knob, fill=float("-inf")) -> list[dict]:
    """The outputs of the variant of ``knob`` (a knob or a pair) on every case of config ``ci``."""
    import torch

    with torch.no_grad():
        variant = kind.variant(ci, frozenset(), knob, fill)
        return [variant(case) for case in kind.cases(ci)]


def assert_pair_composes(ex, pair: tuple[str, str]) -> None:
    """Two knobs at once are both edit lists made in order, and differ somewhere from each alone."""
    from attnprep.grader.edits import edited_source
    from attnprep.grader.kinds import kind_for

    kind = kind_for(ex, seed=0)
    source = ex.solution_path.read_text(encoding="utf-8")
    edits = list({(e["old"], e["new"]): e for k in pair for e in ex.grading["edits"][k]}.values())
    assert kind.edited.source(pair) == edited_source(source, edits)
    apart = dict.fromkeys(pair, False)
    for ci in range(len(kind.configs)):
        alone = dict(zip(pair, (variant_outputs(kind, ci, k) for k in pair)))
        for n, (case, both) in enumerate(zip(kind.cases(ci), variant_outputs(kind, ci, pair))):
            for k in pair:
                apart[k] |= any(not same(case, both[name], alone[k][n][name]) for name in both)
    assert all(apart.values()), (pair, apart)


# Pairs of the masked-attention functions' knobs (the exercises of that kind share these mistakes)
# that must compose: each pair changes what each knob alone computes.
MASKED_ATTENTION_PAIRS = [
    ("padding_mask_inverted", "causal_masks_diagonal"), ("missing_scale", "causal_leaks_next"),
    ("padding_mask_on_queries", "scale_inverted"), ("mask_fill_zero:padding", "padding_mask_inverted"),
    ("mask_after_softmax", "causal_masks_diagonal"), ("attn_times_k", "padding_mask_ignored"),
    ("softmax_wrong_dim", "causal_leaks_next"), ("mask_fill_zero:causal", "scale_by_dim"),
]


# --- exercises picked from the registry, where a test needs one only as an example -------------------


def exercises_of(kind: str) -> list:
    """The registered exercises of ``kind`` (``[contract] kind``), in registry order."""
    return [ex for ex in exercises.registry().values() if ex.contract.kind == kind]


def reference(ex, config: dict | None = None):
    """A fresh instance of a module exercise's reference class (its first object), built with
    ``config`` (default: the first graded config)."""
    module = importlib.import_module(ex.solution_module)
    return getattr(module, ex.contract.objects[0])(**(ex.grading["configs"][0] if config is None else config))


# --- float64 cross-checks of the references against code that shares nothing with them --------------

ATOL = RTOL = 1e-10
SHAPES = [(b, t) for b in (1, 2, 3) for t in (1, 5, 8)]  # (B, T)
MASKS = [(False, False), (True, False), (False, True), (True, True)]  # (padding, is_causal)
MASK_IDS = ["plain", "padding", "is_causal", "padding+is_causal"]


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread is faster and avoids thread spinning on a busy machine
    (a module that cross-checks many small cases uses it: ``pytestmark = pytest.mark.usefixtures``)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def seed_parameters(module, seed: int = 0):
    """float64, every parameter redrawn from a seeded generator (non-zero biases, norm weights away from 1)."""
    import math

    import torch

    module.to(torch.float64)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) / math.sqrt(p.shape[-1]) + (0.3 if p.ndim == 1 else 0.0))
    return module.eval()


def right_padding(B: int, T: int):
    """Bool (B, T), True = real token; right padding, lengths T-1, T-4, ... (at least 1 real token)."""
    import torch

    lengths = torch.tensor([max(1, T - 1 - 3 * b) for b in range(B)])
    return torch.arange(T)[None, :] < lengths[:, None]


def inputs(B: int, T: int, C: int, padding: bool, seed: int = 1):
    """float64 x (B, T, C) from a seeded generator, and the right padding mask or None."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, C, generator=g, dtype=torch.float64)
    return x, (right_padding(B, T) if padding else None)


def graded(out, mask):
    """Only the non-padded query positions are graded (the shared exercise conventions)."""
    return out if mask is None else out[mask]


def assert_close_graded(actual, expected, mask=None) -> None:
    import torch

    torch.testing.assert_close(graded(actual, mask), graded(expected, mask), atol=ATOL, rtol=RTOL)


def torch_attention(q, k, v, mask, is_causal, enable_gqa=False):
    """torch's own attention on (B, H, T, D) q and (B, KV, T, D) k, v with the SPEC's masks."""
    import torch
    import torch.nn.functional as F

    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=enable_gqa)
    T = q.shape[-2]
    allowed = mask[:, None, None, :]  # (B, 1, 1, T)
    if is_causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()  # (B, 1, T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=enable_gqa)


def qkv_weights(module):
    """(wq, bq, wk, bk, wv, bv) of a projection-style attention module, separate or fused q/k/v."""
    if hasattr(module, "qkv_proj"):
        wq, wk, wv = module.qkv_proj.weight.chunk(3, dim=0)  # out features [q; k; v]
        bq, bk, bv = module.qkv_proj.bias.chunk(3, dim=0)
        return wq, bq, wk, bk, wv, bv
    return (module.q_proj.weight, module.q_proj.bias, module.k_proj.weight, module.k_proj.bias,
            module.v_proj.weight, module.v_proj.bias)


def reference_attention(module, x, mask, is_causal, num_heads, num_kv_heads):
    """The projection module's output computed by torch's SDPA from its weights."""
    import torch.nn.functional as F

    B, T, C = x.shape
    D = C // num_heads
    wq, bq, wk, bk, wv, bv = qkv_weights(module)
    q = F.linear(x, wq, bq).reshape(B, T, num_heads, D).permute(0, 2, 1, 3)
    k = F.linear(x, wk, bk).reshape(B, T, num_kv_heads, D).permute(0, 2, 1, 3)
    v = F.linear(x, wv, bv).reshape(B, T, num_kv_heads, D).permute(0, 2, 1, 3)
    out = torch_attention(q, k, v, mask, is_causal, enable_gqa=num_kv_heads != num_heads)
    out = out.permute(0, 2, 1, 3).reshape(B, T, C)
    return F.linear(out, module.o_proj.weight, module.o_proj.bias)


def assert_matches_sdpa(module, num_heads: int, num_kv_heads: int, B: int, T: int, padding: bool, is_causal: bool) -> None:
    """A projection module (seeded, float64) equals torch's SDPA on its own weights, on graded positions."""
    import torch

    module = seed_parameters(module)
    C = module.o_proj.in_features
    x, mask = inputs(B, T, C, padding)
    out = module(x, attention_mask=mask, is_causal=is_causal)
    assert out.shape == (B, T, C) and out.dtype == torch.float64
    assert_close_graded(out, reference_attention(module, x, mask, is_causal, num_heads, num_kv_heads), mask)


def parameter_shapes(module) -> dict[str, tuple]:
    return {name: tuple(p.shape) for name, p in module.named_parameters()}
