"""``attnprep compare``: parameters, forward FLOPs and KV cache of MHA, MQA, GQA and MLA.

Parse and render only; the numbers come from :mod:`attnprep.costs`, imported inside the command
because it measures with torch and this module is imported by ``attnprep --help``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from attnprep import texts
from attnprep.app import EXIT_OK, command_app, console, usage_error

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

if TYPE_CHECKING:
    from attnprep.costs import Comparison

# Kept literal so that --help needs no import of attnprep.costs; a test checks it names every preset.
PRESET_HELP = "llama2-7b, llama3-8b (default), deepseek-v3, seed"

BAR_WIDTH = 32
_EIGHTHS = " ▏▎▍▌▋▊▉"


def si(n: float, unit: str = "") -> str:
    """``67125248`` → ``67.1M``: three significant digits, decimal prefixes."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= factor:
            return f"{n / factor:#.3g}{prefix}{unit}" if n / factor < 100 else f"{n / factor:.0f}{prefix}{unit}"
    return f"{n:g}{unit}"


def binary_bytes(n: int) -> str:
    """``16384`` → ``16 KiB``."""
    value, unit = float(n), "B"
    for next_unit in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.3g} {unit}"


def times(r: float) -> str:
    """A ratio to MHA: ``×0.25``, ``×0.0703``, ``×2.86``."""
    return f"×{r:.2f}" if r >= 0.1 else f"×{r:#.2g}"


def bar(value: int, largest: int, width: int = BAR_WIDTH) -> str:
    """A horizontal bar in eighths of a character, scaled so that ``largest`` fills ``width``."""
    eighths = round(8 * width * value / largest) if largest else 0
    eighths = max(eighths, 1) if value else 0
    full, rest = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(width)


def header(c: "Comparison") -> Text:
    s = c.shape
    text = Text()
    heads = texts.t("cli.compare.heads", d_model=s.d_model, heads=s.num_heads, head_dim=s.head_dim)
    if c.given:  # not the preset's shape: say whose sizes these are, on a line of its own
        from attnprep.costs import MODEL_SIZES

        sizes = texts.t("shell.comma").join(f"{name} {getattr(s, name)}" for name in c.given)
        text.append(texts.t("shell.compare_custom", preset=c.preset, sizes=sizes), style="bold")
        if MODEL_SIZES & set(c.given):
            text.append(texts.t("shell.compare_derived"))
        text.append("\n")
        heads = heads.lstrip(" ·")
    else:
        text.append(c.preset, style="bold")
    text.append(heads)
    if s.inner_dim != s.d_model:
        text.append(f" (H·d_h = {s.inner_dim})")
    text.append(texts.t("cli.compare.gqa", kv_heads=s.num_kv_heads))
    if s.num_kv_heads in (s.num_heads, 1):  # a GQA row that is another row under its name
        text.append(texts.t("shell.gqa_is_mha" if s.num_kv_heads == s.num_heads else "shell.gqa_is_mqa"), style="yellow")
    text.append("\n")
    text.append(f"MLA: q_lora_rank {s.q_lora_rank}, kv_lora_rank {s.kv_lora_rank}, nope {s.qk_nope_head_dim}, "
                f"rope {s.qk_rope_head_dim}, v {s.v_head_dim}")
    if max(s.kv_lora_rank, s.q_lora_rank) >= s.d_model:
        text.append(texts.t("shell.mla_wide", d_model=s.d_model), style="yellow")
    text.append("\n")
    text.append(texts.t("cli.compare.layer", batch=s.batch, seq=s.seq, tokens=f"{s.tokens:,}", dtype=s.dtype,
                        bytes=s.dtype_bytes), style="dim")
    return text


def table(c: "Comparison") -> Table:
    s = c.shape
    t = Table(header_style="bold", box=None, pad_edge=False, padding=(0, 0, 0, 1))
    t.add_column("\n" + texts.t("cli.compare.variant"), no_wrap=True, style="bold")
    t.add_column("\n" + texts.t("cli.compare.params"), justify="right", no_wrap=True)
    t.add_column("\n×MHA", justify="right", no_wrap=True, style="dim")
    t.add_column(texts.t("cli.compare.flops") + f"\n{s.batch}×{s.seq}", justify="right", no_wrap=True)
    t.add_column("\n×MHA", justify="right", no_wrap=True, style="dim")
    t.add_column(texts.t("cli.compare.kv_elements"), justify="right", no_wrap=True)
    t.add_column(texts.t("cli.compare.kv_bytes"), justify="right", no_wrap=True)
    t.add_column(texts.t("cli.compare.kv_cache") + f"\n{s.batch}×{s.seq}", justify="right", no_wrap=True)
    t.add_column("\n×MHA", justify="right", no_wrap=True, style="dim")
    for r in c.rows:
        t.add_row(r.label, si(r.params), times(r.relative["params"]), si(r.flops), times(r.relative["flops"]),
                  f"{r.kv_elements_per_token:,}", binary_bytes(r.kv_bytes_per_token), binary_bytes(r.kv_bytes_total),
                  times(r.relative["kv_elements"]))
    return t


def chart(c: "Comparison") -> Text:
    """KV cache per token per layer as bars scaled to the largest, with the numbers and the formula."""
    largest = max(r.kv_elements_per_token for r in c.rows)
    label_width = max(len(r.label) for r in c.rows)
    text = Text()
    for r in c.rows:
        text.append(f"{r.label:<{label_width}} ", style="bold")
        text.append(bar(r.kv_elements_per_token, largest), style="cyan")
        text.append(f" {r.kv_elements_per_token:>7,} {binary_bytes(r.kv_bytes_per_token):>9} ")
        text.append(f"{times(r.relative['kv_elements']):>6}\n", style="dim")
        key = f"cli.compare.cached.{r.variant}"
        cached = texts.t(key) if texts.has(key) else r.cached
        text.append(f"{'':<{label_width}} {cached}: {r.kv_formula}\n", style="dim")
    text.rstrip()
    return text


def footnote(c: "Comparison") -> Text:
    return Text(texts.t("cli.compare.footnote", is_causal=c.is_causal), style="dim")


def render(c: "Comparison") -> Group:
    title = Text(texts.t("cli.compare.chart_title", dtype=c.shape.dtype), style="bold")
    return Group(header(c), Text(), table(c), Text(), title, chart(c), Text(), footnote(c))


@app.command()
def compare(
    preset: str = typer.Option("llama3-8b", "--preset", "-p", help=f"Model shape: {PRESET_HELP}."),
    seq: Optional[int] = typer.Option(None, "--seq", help="Tokens per sequence (preset: 4096; seed: 10)."),
    batch: Optional[int] = typer.Option(None, "--batch", help="Sequences (preset: 1; seed: 2)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Cache dtype for the bytes: fp32, bf16 or fp16 (default: the preset's, bf16; seed: fp32)."),
    d_model: Optional[int] = typer.Option(None, "--d-model", help="Override d_model."),
    heads: Optional[int] = typer.Option(None, "--heads", help="Override num_heads."),
    head_dim: Optional[int] = typer.Option(
        None, "--head-dim",
        help="Override the MHA/MQA/GQA head_dim (preset: the model's own; with --d-model or --heads: d_model / heads).",
    ),
    kv_heads: Optional[int] = typer.Option(None, "--kv-heads", help="Override the GQA num_kv_heads (with --d-model/--heads/--head-dim: the preset's heads per KV head)."),
    q_lora_rank: Optional[int] = typer.Option(None, "--q-lora-rank", help="Override MLA q_lora_rank (the MLA sizes follow --d-model/--heads/--head-dim unless given)."),
    kv_lora_rank: Optional[int] = typer.Option(None, "--kv-lora-rank", help="Override MLA kv_lora_rank."),
    qk_nope_dim: Optional[int] = typer.Option(None, "--qk-nope-dim", help="Override MLA qk_nope_head_dim."),
    qk_rope_dim: Optional[int] = typer.Option(None, "--qk-rope-dim", help="Override MLA qk_rope_head_dim."),
    v_dim: Optional[int] = typer.Option(None, "--v-dim", help="Override MLA v_head_dim."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """Parameters, forward FLOPs and KV cache of MHA, MQA, GQA and MLA for one model shape.

    Counted by running the reference solutions on the meta device under FlopCounterMode.
    """
    from attnprep import costs

    overrides = dict(seq=seq, batch=batch, dtype=dtype, d_model=d_model, num_heads=heads, head_dim=head_dim,
                     num_kv_heads=kv_heads, q_lora_rank=q_lora_rank, kv_lora_rank=kv_lora_rank,
                     qk_nope_head_dim=qk_nope_dim, qk_rope_head_dim=qk_rope_dim, v_head_dim=v_dim)
    try:
        shape = costs.resolve(preset, **overrides)  # usage errors before torch is imported
    except costs.CompareError as e:
        usage_error(str(e))
    given = tuple(name for name in costs.SIZES if overrides.get(name) is not None)
    comparison = costs.compare_shape(shape, preset=preset, given=given)
    if as_json:
        typer.echo(json.dumps(comparison.to_dict(), indent=2))
    else:
        console().print(render(comparison))
    raise typer.Exit(EXIT_OK)
