"""`attnprep compare`: every measured number against closed forms, the absorbed MLA against the
naive one, and the CLI (table, chart, --json, overrides, usage errors) through CliRunner.

The closed forms below are written out independently of attnprep.costs. FLOPs follow
FlopCounterMode's convention: 2·m·n·k per matmul (a Linear's bias add, softmax, RMSNorm, RoPE and
masking are not counted), and the reference solutions compute the full (T, T) score matrix even
with is_causal=True.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

import attnprep.cli  # noqa: F401  (registers the commands on the app)
from attnprep import costs, exercises
from attnprep.app import app
from attnprep.commands import compare as compare_cmd


def owner(cls: str) -> str:
    """The id of the exercise whose contract names the reference class ``cls``: compare keys its rows by it."""
    return next(ex.id for ex in exercises.registry().values() if cls in ex.contract.objects)


MHA, MQA, GQA, MLA = (owner(cls) for cls in ("MultiHeadAttention", "MultiQueryAttention", "GroupedQueryAttention",
                                             "MultiHeadLatentAttention"))
VARIANT_ORDER = [MHA, MQA, GQA, MLA, "mla_absorbed"]  # the absorbed MLA: a reference without an exercise
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}

# Shapes measured on top of the presets: odd sizes, MQA-like GQA, batch > 1, every dtype.
EXTRA = {
    "odd": ("seed", dict(d_model=96, num_heads=6, num_kv_heads=3, q_lora_rank=40, kv_lora_rank=24,
                         qk_nope_head_dim=10, qk_rope_head_dim=6, v_head_dim=14, batch=3, seq=7, dtype="fp16")),
    "kv1": ("llama2-7b", dict(num_kv_heads=1, seq=33, batch=2, dtype="fp32")),
    # heads narrower than d_model / H (the inner width H·d_h = 48 < d_model = 96)
    "narrow": ("seed", dict(d_model=96, num_heads=6, head_dim=8, num_kv_heads=2, seq=5)),
}


@functools.cache
def measured(name: str) -> costs.Comparison:
    if name in costs.PRESETS:
        return costs.measure(name)
    preset, overrides = EXTRA[name]
    return costs.measure(preset, **overrides)


# --- closed forms ------------------------------------------------------------------------------


def expected(s: costs.Shape) -> dict[str, dict[str, int]]:
    """params, flops and KV elements per token of each variant, from the sizes alone."""
    d, H, G, B, T = s.d_model, s.num_heads, s.num_kv_heads, s.batch, s.seq
    dh = s.head_dim  # the model's own: H·d_h need not be d_model (DeepSeek-V3: 128·128 > 7168)
    Hd = H * dh
    ql, kvl, nope, pe, dv = s.q_lora_rank, s.kv_lora_rank, s.qk_nope_head_dim, s.qk_rope_head_dim, s.v_head_dim
    N = B * T  # tokens

    def linear(i: int, o: int, bias: bool = True) -> int:
        return i * o + (o if bias else 0)

    def mm(m: int, n: int, k: int) -> int:  # one (m×k)·(k×n) matmul
        return 2 * m * n * k

    attention = mm(B * H * T, T, dh) + mm(B * H * T, dh, T)  # q·kᵀ and attn·v, per query head
    mla_params = (linear(d, ql, False) + ql + linear(ql, H * (nope + pe), False)
                  + linear(d, kvl + pe, False) + kvl + linear(kvl, H * (nope + dv), False)
                  + linear(H * dv, d, False))
    mla_q = mm(N, ql, d) + mm(N, H * (nope + pe), ql)  # wq_a, wq_b
    return {
        # q_proj d -> H·d_h, k_proj and v_proj d -> (H, 1, G)·d_h, o_proj H·d_h -> d
        MHA: dict(params=3 * linear(d, Hd) + linear(Hd, d),
                  flops=3 * mm(N, Hd, d) + mm(N, d, Hd) + attention,
                  kv=2 * H * dh),
        MQA: dict(params=linear(d, Hd) + 2 * linear(d, dh) + linear(Hd, d),
                  flops=mm(N, Hd, d) + 2 * mm(N, dh, d) + mm(N, d, Hd) + attention,
                  kv=2 * dh),
        GQA: dict(params=linear(d, Hd) + 2 * linear(d, G * dh) + linear(Hd, d),
                  flops=mm(N, Hd, d) + 2 * mm(N, G * dh, d) + mm(N, d, Hd) + attention,
                  kv=2 * G * dh),
        MLA: dict(params=mla_params,
                  flops=(mla_q + mm(N, kvl + pe, d) + mm(N, H * (nope + dv), kvl)  # wkv_a, wkv_b
                         + mm(B * H * T, T, nope + pe) + mm(B * H * T, dv, T)  # scores, attn·v
                         + mm(N, d, H * dv)),  # wo
                  kv=H * (nope + pe) + H * dv),
        # DeepSeek-V3's absorb path: no wkv_b matmul on the tokens; W_UK is applied to q_nope
        # (per head, nope -> kvl), the scores are taken against the latent (kvl) plus the shared
        # RoPE key, the weighted sum is over latents (kvl), and W_UV maps kvl -> dv per head.
        "mla_absorbed": dict(params=mla_params,
                             flops=(mla_q + mm(N, kvl + pe, d)
                                    + mm(N * H, kvl, nope)  # q_nope · W_UK
                                    + mm(B * H * T, T, kvl) + mm(B * H * T, T, pe)  # scores
                                    + mm(B * H * T, kvl, T)  # attn · latents
                                    + mm(N * H, dv, kvl)  # · W_UV
                                    + mm(N, d, H * dv)),  # wo
                             kv=kvl + pe),
    }


SHAPES = [*costs.PRESETS, *EXTRA]


@pytest.mark.parametrize("name", SHAPES)
def test_every_number_matches_the_closed_forms(name):
    c = measured(name)
    s = c.shape
    want = expected(s)
    assert [r.variant for r in c.rows] == VARIANT_ORDER
    base = want[MHA]
    for r in c.rows:
        w = want[r.variant]
        got = (r.params, r.flops, r.kv_elements_per_token)
        assert got == (w["params"], w["flops"], w["kv"]), r.variant
        size = DTYPE_BYTES[s.dtype]
        assert r.kv_bytes_per_token == w["kv"] * size
        assert r.kv_elements_total == w["kv"] * s.batch * s.seq
        assert r.kv_bytes_total == w["kv"] * size * s.batch * s.seq
        assert r.relative == {"params": w["params"] / base["params"], "flops": w["flops"] / base["flops"],
                              "kv_elements": w["kv"] / base["kv"]}


@pytest.mark.parametrize("name", SHAPES)
def test_cache_formula_text_states_the_number(name):
    """The formula shown to the user ('2·G·d_h = 2·8·128') evaluates to the row's elements."""
    for r in measured(name).rows:
        numbers = r.kv_formula.split(" = ")[1]
        total = sum(functools.reduce(lambda a, b: a * b, map(int, term.split("·")))
                    for term in numbers.split(" + "))
        assert total == r.kv_elements_per_token, r.kv_formula


def test_presets_fill_every_field_as_documented():
    seed = costs.PRESETS["seed"].shape
    assert (seed.d_model, seed.num_heads, seed.num_kv_heads, seed.batch, seed.seq) == (256, 8, 4, 2, 10)
    assert (seed.q_lora_rank, seed.kv_lora_rank, seed.qk_nope_head_dim, seed.qk_rope_head_dim,
            seed.v_head_dim) == (128, 64, 32, 16, 32)
    ds = costs.PRESETS["deepseek-v3"].shape
    assert (ds.d_model, ds.num_heads, ds.q_lora_rank, ds.kv_lora_rank, ds.qk_nope_head_dim,
            ds.qk_rope_head_dim, ds.v_head_dim) == (7168, 128, 1536, 512, 128, 64, 128)
    l3 = costs.PRESETS["llama3-8b"].shape
    assert (l3.d_model, l3.num_heads, l3.num_kv_heads) == (4096, 32, 8)
    l2 = costs.PRESETS["llama2-7b"].shape
    assert (l2.d_model, l2.num_heads) == (4096, 32)
    # the models' real head_dim, not d_model / heads (DeepSeek-V3's would be 56)
    assert (l2.head_dim, l3.head_dim, ds.head_dim, seed.head_dim) == (128, 128, 128, 32)
    for preset in costs.PRESETS.values():
        assert preset.shape.problems() == []
    assert costs.DEFAULT_PRESET in costs.PRESETS


def test_headline_ratios_of_llama3():
    """The numbers an interviewer expects: GQA-8 of 32 heads caches a quarter, MQA 1/32."""
    c = measured("llama3-8b")
    assert c.row(GQA).relative["kv_elements"] == 0.25
    assert c.row(MQA).relative["kv_elements"] == 1 / 32
    assert c.row("mla_absorbed").kv_elements_per_token == 576
    assert c.row(GQA).kv_bytes_per_token == 4096  # 2·8·128 elements × 2 bytes (bf16)


def test_deepseek_v3_mha_is_the_papers_128_heads_of_128():
    """DeepSeek-V2's paper: MHA with the same 128 heads of 128 caches 2·128·128 = 32,768 elements per
    token per layer, MLA 576; naive MLA (192-dim keys, 128-dim values per head) 1.25× MHA."""
    c = measured("deepseek-v3")
    assert c.row(MHA).kv_elements_per_token == 32_768 and c.row(MHA).kv_formula.endswith("2·128·128")
    assert c.row("mla_absorbed").kv_elements_per_token == 576
    assert c.row("mla_absorbed").relative["kv_elements"] == 576 / 32_768
    assert c.row(MLA).relative["kv_elements"] == 1.25
    assert c.row(GQA).kv_elements_per_token == 2 * 8 * 128 and c.row(MQA).kv_elements_per_token == 256
    # the projections map the model's width to the heads and back
    widened = costs.build(costs.VARIANTS[0], c.shape)
    assert (widened.q_proj.in_features, widened.q_proj.out_features) == (7168, 16384)
    assert (widened.o_proj.in_features, widened.o_proj.out_features) == (16384, 7168)


def test_a_widened_module_is_only_built_on_meta():
    with pytest.raises(ValueError, match="meta"):
        costs.build(costs.VARIANTS[0], costs.PRESETS["deepseek-v3"].shape, device="cpu")


def test_head_dim_rules():
    assert costs.resolve("deepseek-v3").head_dim == 128  # the preset's own
    assert costs.resolve("deepseek-v3", head_dim=64).head_dim == 64  # given
    assert costs.resolve("deepseek-v3", num_heads=64).head_dim == 7168 // 64  # derived from a new shape
    assert costs.resolve("llama3-8b", d_model=2048, head_dim=256).head_dim == 256
    with pytest.raises(costs.CompareError, match="head_dim must be a positive integer"):
        costs.resolve("llama3-8b", head_dim=0)
    with pytest.raises(costs.CompareError, match="not divisible by num_heads 7"):
        costs.resolve("llama3-8b", num_heads=7)
    assert costs.resolve("llama3-8b", num_heads=7, num_kv_heads=1, head_dim=128).inner_dim == 896  # fine with head_dim


def test_overrides_replace_fields_and_validate():
    s = costs.resolve("llama3-8b", num_heads=16, num_kv_heads=2, seq=128, dtype="FP16", batch=None)
    assert (s.num_heads, s.num_kv_heads, s.seq, s.dtype, s.batch, s.head_dim) == (16, 2, 128, "fp16", 1, 256)
    for bad, message in [
        (dict(dtype="int8"), "unknown dtype"),
        (dict(num_heads=5), "not divisible by num_heads"),
        (dict(num_kv_heads=3), "not divisible by num_kv_heads"),
        (dict(qk_rope_head_dim=7), "must be even"),
        (dict(seq=0), "positive"),
        (dict(heads=4), "unknown size"),
    ]:
        with pytest.raises(costs.CompareError, match=message):
            costs.resolve("llama3-8b", **bad)
    with pytest.raises(costs.CompareError, match="did you mean 'deepseek-v3'"):
        costs.resolve("deepseek")


def test_measuring_allocates_nothing_real():
    module = costs.build(costs.VARIANTS[3], costs.PRESETS["deepseek-v3"].shape)
    assert {p.device.type for p in module.parameters()} == {"meta"}
    assert not module.training


# --- the absorbed form equals the naive one ------------------------------------------------------


def _randomised(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3 + (1.0 if p.ndim == 1 else 0.0))
    return module


def test_absorbed_mla_equals_naive_mla():
    """The absorbed row is the cached latent exercise's reference (a causal prefill, what compare counts)."""
    from attnprep.solutions.mla_decode import MLADecode

    shape = costs.resolve("seed", d_model=48, num_heads=4, q_lora_rank=24, kv_lora_rank=20,
                          qk_nope_head_dim=8, qk_rope_head_dim=6, v_head_dim=10)
    naive = _randomised(costs.build(costs.VARIANTS[3], shape, device="cpu").double(), seed=0)
    absorbed = costs.build(costs.VARIANTS[4], shape, device="cpu").double()
    assert isinstance(absorbed, MLADecode)
    absorbed.load_state_dict(naive.state_dict())
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 9, shape.d_model, generator=g, dtype=torch.float64)
    with torch.no_grad():
        want = naive(x, is_causal=True)
        torch.testing.assert_close(absorbed(x, is_causal=True), want, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(MLADecode.forward(absorbed, x)[0], want, rtol=1e-10, atol=1e-10)
    # and the cache the absorbed module reports is the one the comparison counts
    assert absorbed.kv_cache_elements_per_token() == costs.VARIANTS[4].cache(absorbed) == 20 + 6


# --- the CLI -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "ATTNPREP_DEBUG"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str):
    return CliRunner().invoke(app, ["compare", *args], catch_exceptions=False)


def test_json_document():
    result = run("--preset", "seed", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"version", "preset", "given", "config", "is_causal", "rows"}
    assert doc["given"] == []
    assert doc["preset"] == "seed" and doc["is_causal"] is True
    shape = costs.PRESETS["seed"].shape
    assert doc["config"] == {**{f: getattr(shape, f) for f in costs.Shape.__dataclass_fields__}, "dtype_bytes": 4}
    assert doc["config"]["head_dim"] == 32
    assert [r["variant"] for r in doc["rows"]] == VARIANT_ORDER
    want = expected(shape)
    for row in doc["rows"]:
        assert {"variant", "params", "flops", "kv_elements_per_token", "kv_bytes_per_token",
                "kv_bytes_total", "relative"} <= set(row)
        w = want[row["variant"]]
        assert (row["params"], row["flops"], row["kv_elements_per_token"]) == (w["params"], w["flops"], w["kv"])
        assert row["kv_bytes_total"] == w["kv"] * 4 * 2 * 10
        assert set(row["relative"]) == {"params", "flops", "kv_elements"}


def test_overrides_change_the_config():
    result = run("--preset", "llama3-8b", "--json", "--seq", "64", "--batch", "2", "--dtype", "fp32",
                 "--d-model", "1024", "--heads", "16", "--kv-heads", "4", "--q-lora-rank", "256",
                 "--kv-lora-rank", "128", "--qk-nope-dim", "32", "--qk-rope-dim", "16", "--v-dim", "48")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    config = doc["config"]
    assert {k: config[k] for k in ("seq", "batch", "dtype", "d_model", "num_heads", "num_kv_heads", "q_lora_rank",
                                   "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")} == dict(
        seq=64, batch=2, dtype="fp32", d_model=1024, num_heads=16, num_kv_heads=4, q_lora_rank=256,
        kv_lora_rank=128, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=48)
    want = expected(costs.resolve("llama3-8b", **{k: config[k] for k in costs.Shape.__dataclass_fields__}))
    for row in doc["rows"]:
        w = want[row["variant"]]
        assert (row["params"], row["flops"], row["kv_elements_per_token"]) == (w["params"], w["flops"], w["kv"])


def test_head_dim_option():
    result = run("--preset", "deepseek-v3", "--head-dim", "56", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["config"]["head_dim"] == 56
    row = next(r for r in doc["rows"] if r["variant"] == MHA)
    assert row["kv_elements_per_token"] == 2 * 128 * 56
    shown = run("--preset", "deepseek-v3").stdout
    assert "128 heads of 128 (H·d_h = 16384)" in shown.splitlines()[0]
    assert "2·H·d_h = 2·128·128" in shown and "32,768" in shown


def test_table_and_chart():
    result = run("--preset", "llama3-8b")
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    c = measured("llama3-8b")
    for r in c.rows:
        table_line = next(line for line in lines if line.startswith(r.label + " ") and compare_cmd.si(r.params) in line)
        for cell in (compare_cmd.si(r.flops), f"{r.kv_elements_per_token:,}",
                     compare_cmd.binary_bytes(r.kv_bytes_per_token), compare_cmd.binary_bytes(r.kv_bytes_total),
                     compare_cmd.times(r.relative["kv_elements"])):
            assert cell in table_line, (cell, table_line)
        assert r.kv_formula in out
    # the chart: the largest cache (naive MLA here) fills the bar, GQA is a quarter of MHA's
    chart = out[out.index("KV cache per token per layer"):]
    bars = {r.label: next(line for line in chart.splitlines() if line.startswith(r.label + " ")) for r in c.rows}
    assert "█" * compare_cmd.BAR_WIDTH in bars["MLA (naive)"]
    mha_len = bars["MHA"].count("█")
    assert bars["GQA"].count("█") in (mha_len // 4, mha_len // 4 + 1)
    assert "×0.25" in bars["GQA"] and "2,048" in bars["GQA"] and "4 KiB" in bars["GQA"]
    assert "llama3-8b" in lines[0] and "4096" in out


def test_render_helpers():
    assert compare_cmd.si(67125248) == "67.1M"
    assert compare_cmd.si(824633720832) == "825G"
    assert compare_cmd.si(512) == "512"
    assert compare_cmd.si(41953280) == "42.0M"
    assert compare_cmd.binary_bytes(224) == "224 B"
    assert compare_cmd.binary_bytes(16384) == "16 KiB"
    assert compare_cmd.binary_bytes(1152) == "1.12 KiB"
    assert compare_cmd.times(0.25) == "×0.25" and compare_cmd.times(1 / 128) == "×0.0078"
    assert compare_cmd.times(576 / 14336) == "×0.040"
    assert compare_cmd.bar(10, 10, width=4) == "████"
    assert compare_cmd.bar(1, 16, width=4) == "▎   "
    assert compare_cmd.bar(1, 10**9, width=4) == "▏   "  # a cache is never drawn as nothing
    assert compare_cmd.bar(0, 10, width=4) == "    "


@pytest.mark.parametrize("args, message", [
    (["--dtype", "int8"], "unknown dtype 'int8'"),
    (["--preset", "llama4"], "unknown preset 'llama4'"),
    (["--heads", "7"], "not divisible by num_heads"),
    (["--seq", "0"], "seq must be a positive integer"),
])
def test_usage_errors_exit_2_with_one_line(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr


def test_help_and_usage_errors_do_not_import_torch():
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from attnprep.app import app\n"
        "r = CliRunner().invoke(app, ['compare', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(r.output)\n"
        "r = CliRunner().invoke(app, ['compare', '--preset', 'nope'])\n"
        "assert r.exit_code == 2, r.output\n"
        "print('TORCH', any(m == 'torch' or m.startswith('torch.') for m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("TORCH False")
    help_text = proc.stdout
    for name in costs.PRESETS:
        assert name in compare_cmd.PRESET_HELP and name in help_text
    assert f"{costs.DEFAULT_PRESET} (default)" in compare_cmd.PRESET_HELP


# --- your own sizes make a coherent shape, and the header says so (issue 30 point 10) --------------


def test_model_sizes_bring_the_gqa_and_mla_sizes_with_them():
    from attnprep import costs

    shape = costs.resolve("llama3-8b", d_model=512, num_heads=8)
    assert (shape.head_dim, shape.num_kv_heads) == (64, 2)  # llama3-8b's 4 query heads per KV head
    assert shape.kv_lora_rank < shape.d_model and shape.q_lora_rank < shape.d_model  # the latents compress
    assert (shape.qk_nope_head_dim, shape.qk_rope_head_dim, shape.v_head_dim) == (64, 32, 64)
    explicit = costs.resolve("llama3-8b", d_model=512, num_heads=8, num_kv_heads=4, kv_lora_rank=96)
    assert (explicit.num_kv_heads, explicit.kv_lora_rank) == (4, 96)  # what is given is kept
    for name, preset in costs.PRESETS.items():  # the rule makes every preset's own sizes
        s = preset.shape
        again = costs.resolve(name, d_model=s.d_model, num_heads=s.num_heads, head_dim=s.head_dim)
        assert again == s, name
    assert costs.resolve("llama3-8b", seq=10) == dataclasses.replace(costs.PRESETS["llama3-8b"].shape, seq=10)


def test_the_header_names_your_sizes_and_a_gqa_that_is_another_variant():
    result = run("--d-model", "512", "--heads", "8")
    assert result.exit_code == 0, result.output
    head = " ".join(result.stdout.split("\n\n")[0].split())
    assert head.startswith("llama3-8b with your sizes: d_model 512, num_heads 8")
    assert "8 heads of 64 · GQA: 2 KV heads" in head and "kv_lora_rank 128" in head
    same = " ".join(run("--d-model", "1024", "--heads", "8", "--kv-heads", "8").stdout.split())
    assert "GQA here is MHA" in same
    wide = " ".join(run("--kv-lora-rank", "8192").stdout.split())
    assert "llama3-8b with your sizes: kv_lora_rank 8192" in wide and "does not compress" in wide
    plain = run().stdout.splitlines()[0]
    assert plain.startswith("llama3-8b · ") and "your sizes" not in plain
    doc = json.loads(run("--heads", "16", "--json").stdout)
    assert doc["given"] == ["num_heads"] and doc["config"]["num_kv_heads"] == 4


def test_dtype_help_states_its_default():
    assert "default: the preset's, bf16; seed: fp32" in " ".join(run("--help").stdout.split())
