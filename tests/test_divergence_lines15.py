"""lines15's mechanism for issue 24's line (grader/repair.py, reason ``flag_runs``): a step run, or a value
picked, by a setting of the file (a class attribute, a dataclass field's default) is said where the
setting is set when the case, traced again with the branch's test negated, comes out right; a branch whose
own code is wrong keeps its line. Round 13's two attempts of the class and three of other exercises and
styles. And (``twin_read``) a module read where its twin, built by the same call and never read, belongs: the
read said when the case, traced again with the twin there, comes out right. And (``enum_order``) an enum's
members numbered the other way round: said where two of them, swapped, make the case right. And
(``stage_order``) two neighbouring stages of one value (appends of a call, reassignments by a function of the
file) in the other order: said at the first when the two, swapped, make the case right. And
(``default_differs``, eighteenth session) a parameter's default other than the reference's, which the
grader leaves alone: said at the default when the case, traced again with the reference's default written
there, comes out right (benchmarks/mutation.py's defaults changed in a signature: 7 of 7 at their line). And
(``number_off``, nineteenth session) a plain Python number one off, or a size read from another axis, that
a slice, an index or a loop's range reads: said where it is computed when one change of one of its
integers makes the case right. And (``mask_negated``, twentieth session) a mask made in one convention (True = keep, or
True = masked) and combined or applied as if in the other: its values match the reference's own mask where it
is made, so it is said there when one negation there makes the case right and no negation of the mask the
finder's statement applies does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnprep import texts
from attnprep.grader import repair
from attnprep.grader.result import Divergence

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("decoder_layer/litgpt_block_shared_attention_norm_flag.py", "flag_runs"),  # round 13: a module picked
    ("cross_attention/enum_flag_mask_kinds_causal_default_dropout_training.py", "flag_runs"),  # round 13: enum.Flag
    ("swiglu/gemma_mlp_config_hidden_activation_tanh.py", "flag_runs"),  # a string field, if / else
    ("norms/flax_port_class_switches_rms_use_mean.py", "flag_runs"),  # a class switch runs a step
    ("mha/composer_class_setting_scale_choice_d_model.py", "flag_runs"),  # a conditional expression picks a number
    ("decoder_layer/annotated_sublayer_connection_one_norm.py", "twin_read"),  # round 9: a wrapper given one norm twice
    ("decoder_layer/partial_residual_branches_one_norm.py", "twin_read"),  # functools.partial branches
    ("mha/projection_table_dict_v_entry_is_k_proj.py", "twin_read"),  # a dict of projections, v's entry k_proj
    ("mha_fused/intenum_slots_value_before_key.py", "enum_order"),  # round 13: IntEnum slots of a fused output
    ("mha_fused/misses/enum_slices_kqv_order.py", "enum_order"),  # round 8: Enum values as slices
    ("sampling/intenum_stage_numbers_sorted_top_p_second.py", "enum_order"),  # stages run in sorted(Stage)
    ("kv_cache/intenum_cache_slots_value_first.py", "enum_order"),  # the cache given back by slots
    ("sampling/hf_logits_processor_list_top_p_first.py", "stage_order"),  # round 9: warpers appended under ifs
    ("sampling/own_filters_reassigned_top_p_then_top_k.py", "stage_order"),  # own filters reassigned under ifs
    ("alibi/helper_pipeline_softmax_before_bias.py", "stage_order"),  # a pipeline of the file's own helpers
    ("sampling/inplace_top_p_first.py", "stage_order"),  # round 5: two if blocks, each a cut filled in place
    ("decoder_layer/hf_llama3_rope_theta_default.py", "default_differs"),  # Llama-3's rope_theta as __init__'s default
    ("sampling/engine_warpers_top_p_default_from_generation_config.py", "default_differs"),  # a generation config's top_p
    ("flash/mlx_axis_helpers_causal_end_plus_one.py", "number_off"),  # a loop's bound one block too far
    ("rope/neox_rotary_half_from_heads_axis.py", "number_off"),  # rotate_half's half read from the heads' axis
    ("sliding_window/per_query_loop_lower_bound_one_late.py", "number_off"),  # a per-query slice's start one late
    ("mha/graykode_tutorial_pad_mask_or_not_negated.py", "mask_negated"),  # a True = real mask OR-ed into a True = masked one
    ("mha/megatron_layer_scaling_coeff_padding_not_inverted.py", "mask_negated"),  # round 18: Megatron's True = masked
    ("mha/fairseq_mask_not_negated.py", "mask_negated"),  # fairseq's key_padding_mask taken as the contract's mask
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_setting_is_said(name, reason, graded):
    path = CORPUS / name
    assert_pointed(path, graded(path), reason)


@pytest.mark.parametrize("reason", ["flag_runs", "twin_read", "enum_order", "stage_order", "default_differs", "number_off",
                                    "mask_negated"])
def test_the_reasons_read_in_both_languages(reason):
    d = Divergence(12, "use_mean = True", "self.use_mean", (3, 4), "(B, T)", reason, "f")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "self.use_mean" in words and "{" not in words, (reason, lang)


SETTINGS = '''
import enum


class Kind(enum.Flag):
    A = enum.auto()
    B = enum.auto()


LIMIT = 3


class Block:
    center = True
    kinds = Kind.A | Kind.B

    def __init__(self, d, causal=False, scaled=True):
        self.causal = causal
        self.scaled = scaled
        self.mode = "gelu"

    def forward(self, x, mask=None):
        h = x
        if self.center:
            h = h - h.mean(-1)
        if Kind.B in self.kinds:
            h = h * 2
        if self.causal:
            h = h.tril()
        if self.scaled:
            h = h / 2
        if mask is not None:
            h = h + 1
        if self.center and mask is not None:
            h = h + 2
        if self.center and self.center_rows():
            h = h + 3
        k = 1
        if k:
            h = h + 4
        h = h.relu() if self.mode == "relu" else h.sigmoid()
        if h.sum() > 0:
            h = h + 5
        return h
'''


def _line(text: str, source: str = SETTINGS) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def _asked(text: str, given=frozenset()) -> list[tuple[int, str]]:
    return [(line, setting) for _, line, setting in repair.candidates(SETTINGS, _line(text), frozenset(given))]


def test_a_setting_of_the_file_is_followed_to_where_it_is_set():
    assert _asked("h = h - h.mean(-1)") == [(_line("center = True"), "self.center")]
    assert _asked("h = h * 2") == [(_line("kinds = Kind.A | Kind.B"), "self.kinds")]  # an enum member is no setting
    assert _asked("h = h.relu() if self.mode == \"relu\" else h.sigmoid()") == [(_line('self.mode = "gelu"'), "self.mode")]


def test_what_the_caller_or_the_inputs_decide_is_no_setting():
    assert _asked("h = h + 1") == []  # a parameter of the function
    assert _asked("h = h + 2") == []  # a setting and a parameter
    assert _asked("h = h + 3") == []  # a call
    assert _asked("h = h + 4") == []  # a local
    assert _asked("h = h + 5") == []  # tensor arithmetic (a call, a local)


def test_a_default_the_grader_passes_is_the_users_setting():
    assert _asked("h = h.tril()", {"causal"}) == []  # the exercise's own parameter
    init = _line("def __init__(self, d, causal=False, scaled=True):")
    assert _asked("h = h / 2") == [(init, "self.scaled")]  # a default the grader leaves alone
    assert _asked("h = h / 2", {"scaled"}) == []


def test_the_negated_copy_keeps_every_line():
    tree = ast.parse(SETTINGS)
    test = next(n.test for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "Kind.B in self.kinds")
    copy = repair.negated(SETTINGS, test)
    assert len(copy.splitlines()) == len(SETTINGS.splitlines())
    assert copy.splitlines()[test.lineno - 1].strip() == "if (not (Kind.B in self.kinds)):"
    ast.parse(copy)


WRONG_BRANCH = '''# attnprep: norms
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).to(x.dtype)


class LayerNorm(nn.Module):
    use_bias = True

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        h = (h - h.mean(-1, keepdim=True)) * torch.rsqrt(h.var(-1, unbiased=False, keepdim=True) + self.eps)
        if self.use_bias:
            h = h * self.weight - self.bias
        return h.to(x.dtype)
'''


def test_a_branch_whose_own_code_is_wrong_keeps_its_line(tmp_path, graded):
    """``use_bias`` is right; the branch subtracts the bias. Taken the other way, the case is still wrong
    (neither weight nor bias): the branch's line stands."""
    path = tmp_path / "layernorm_bias_subtracted.py"
    path.write_text(WRONG_BRANCH, encoding="utf-8")
    d = graded(path, "norms").divergence
    assert d is not None and d.reason != "flag_runs"
    assert d.line == _line("h = h * self.weight - self.bias", WRONG_BRANCH)


TWINS = '''
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm_a = RMSNorm(d, 1e-6)
        self.norm_b = RMSNorm(d, 1e-6)
        self.norm_c = RMSNorm(d, 1e-5)
        self.pair = (self.norm_a, self.norm_a)

    def forward(self, x):
        return self.pair[1](self.norm_c(x)) + self.norm_a(x)


class Alike(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        return self.o(self.q(x) + self.k(x))


class Used(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x):
        return self.b(self.a(self.a(x)))
'''


def test_a_module_never_read_is_asked_of_the_last_read_of_its_one_twin():
    found = [(r.lineno, ast.unparse(r), twin) for r, twin in repair.twins(TWINS)]
    # norm_c is built by another call (eps): no twin; Alike's v has three twins read once each: none; Used reads both
    assert found == [(_line("return self.pair[1](self.norm_c(x)) + self.norm_a(x)", TWINS), "self.norm_a", "norm_b")]
    read = repair.twins(TWINS)[0][0]
    swapped = repair._swapped(TWINS, read, "norm_b").splitlines()[read.lineno - 1].strip()
    assert swapped == "return self.pair[1](self.norm_c(x)) + self.norm_b(x)"


ENUMS = '''
import enum


class Part(enum.IntEnum):
    K = 0
    Q = 1
    V = 2


class Other:
    A = 0
    B = 1


def pick(t):
    return t[Part.Q], t[Part.K], t[Other.A]
'''


def test_every_pair_of_an_enums_numbers_is_tried_swapped():
    swaps = repair.enum_swaps(ENUMS)
    assert [(a, b, name) for a, b, _, name in swaps] == [
        (_line("K = 0", ENUMS), _line("Q = 1", ENUMS), "Part.K, Part.Q"),
        (_line("K = 0", ENUMS), _line("V = 2", ENUMS), "Part.K, Part.V"),
        (_line("Q = 1", ENUMS), _line("V = 2", ENUMS), "Part.Q, Part.V"),
    ]
    swapped = swaps[0][2].splitlines()
    assert swapped[_line("K = 0", ENUMS) - 1].strip() == "K = 1" and swapped[_line("Q = 1", ENUMS) - 1].strip() == "Q = 0"
    assert len(swapped) == len(ENUMS.splitlines())


def test_an_enum_read_once_or_numbered_alike_is_not_asked():
    assert repair.enum_swaps(ENUMS.replace("t[Part.Q], ", "")) == []  # one member read: no order to get wrong
    assert repair.enum_swaps(ENUMS.replace("V = 2", "V = 1")) == []  # two members of one number (an alias)
    assert repair.enum_swaps(ENUMS.replace("enum.IntEnum", "object")) == []  # not an enum


STAGES = '''
def top_k(s, k):
    return s


def top_p(s, p):
    return s


def probs(logits, k, p, mask):
    warpers = []
    if p < 1.0:
        warpers.append(TopP(p))
    if k > 0:
        warpers.append(TopK(k))
    s = logits
    s = top_p(s, p)
    s = top_k(s, k)
    s = s.masked_fill(mask, 0)
    s = s.masked_fill(~mask, 1)
    return s
'''


def test_neighbouring_stages_of_one_value_are_tried_swapped():
    swaps = repair.stage_swaps(STAGES)
    # tensor methods (masked_fill) are no stages of the file's own: two masks filled in turn commute
    assert [(a, b, name) for a, b, _, name in swaps] == [
        (_line("if p < 1.0:", STAGES), _line("warpers.append(TopK(k))", STAGES), "warpers"),
        (_line("s = top_p(s, p)", STAGES), _line("s = top_k(s, k)", STAGES), "s"),
    ]
    swapped = swaps[0][2].splitlines()
    at = _line("if p < 1.0:", STAGES) - 1
    assert [line.strip() for line in swapped[at:at + 4]] == ["if k > 0:", "warpers.append(TopK(k))", "if p < 1.0:",
                                                             "warpers.append(TopP(p))"]
    assert len(swapped) == len(STAGES.splitlines())


BLOCKS = '''
def probs(z, k, p, mask):
    if p < 1.0:
        ps, order = z.softmax(-1).sort(-1, descending=True)
        drop = (ps.cumsum(-1) - ps >= p).scatter(-1, order, ps >= 0)
        z.masked_fill_(drop, float("-inf"))
    if k > 0:
        kth = z.topk(k, dim=-1).values[:, -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    if mask is not None:
        z.masked_fill_(mask, 0)
        z.masked_fill_(~mask, 1)
    if mask is not None:
        w = mask.float()
        z.mul_(w)
    return z.softmax(-1)
'''


def test_neighbouring_if_blocks_that_each_cut_one_value_from_its_own_values_are_tried_swapped():
    """An ``if`` block whose last statement changes a name (in place, or a new value from it) after an
    earlier statement read it: a cut worked out from the values (a nucleus, then a top-k). A block whose
    change never reads the name first (a mask filled, a weight multiplied in) is no such stage."""
    swaps = repair.stage_swaps(BLOCKS)
    assert [(a, b, name) for a, b, _, name in swaps] == [
        (_line("if p < 1.0:", BLOCKS), _line("z = z.masked_fill(z < kth, float(\"-inf\"))", BLOCKS), "z")]
    swapped = [line.strip() for line in swaps[0][2].splitlines()]
    assert swapped.index("if k > 0:") < swapped.index("if p < 1.0:")
    assert len(swapped) == len(BLOCKS.splitlines())


DEFAULTS_MINE = '''
class Layer:
    def __init__(self, d, theta=500000.0, eps=1e-6, name="x", bias=True):
        pass

    def forward(self, x, scale=None, window=4,
                causal=False):
        pass


def helper(x, k=3):
    return x
'''

DEFAULTS_REFERENCE = '''
class Layer:
    def __init__(self, d, theta=10000.0, eps=1e-06, name="x", bias=1):
        pass

    def forward(self, x, scale=1.0, window=4, causal=True):
        pass


def helper(x, k=3.0):
    return x
'''


def test_default_swaps_are_the_literal_defaults_that_differ_written_as_the_reference_s():
    swaps = repair.default_swaps(DEFAULTS_MINE, DEFAULTS_REFERENCE)
    # theta differs; eps 1e-6 == 1e-06 and k 3 == 3.0 do not; bias True vs 1 is another type; scale None is
    # no number of the reference's kind; causal is written on a line of its own, but on one line
    assert [(line, name) for line, name, _ in swaps] == [(3, "theta"), (7, "causal")]
    theta = swaps[0][2].splitlines()[2]
    assert theta == "    def __init__(self, d, theta=10000.0, eps=1e-6, name=\"x\", bias=True):"
    assert swaps[1][2].splitlines()[6] == "                causal=True):"
    assert swaps[0][2].splitlines()[:2] + swaps[0][2].splitlines()[3:] == DEFAULTS_MINE.splitlines()[:2] + DEFAULTS_MINE.splitlines()[3:]
    # a parameter the grader passes never runs with its default
    assert [n for _, n, _ in repair.default_swaps(DEFAULTS_MINE, DEFAULTS_REFERENCE, frozenset({"theta"}))] == ["causal"]


NUMBERS = '''
import math


def attend(q, k, v, window):
    B, H, T, D = q.shape
    half = q.shape[0] // 2
    scale = 1 / math.sqrt(q.size(-1))
    outs = []
    for i in range(T):
        lo = max(0, i - window + 2)
        ks = k[:, :, lo:i + 1]
        s = q[:, :, i:i + 1] @ ks.transpose(-2, -1) * scale
        x1 = q[..., :half]
        same = T == 4
        outs.append(s.softmax(-1) @ v[:, :, lo:i + 1] if same else x1)
    return outs
'''


def test_numbers_read_as_extents_are_changed_one_up_one_down_or_read_from_another_axis():
    line = _line("s = q[:, :, i:i + 1] @ ks.transpose(-2, -1) * scale", NUMBERS)
    edits = repair.number_edits(NUMBERS, line, frozenset({line, line - 1}))
    changed = {(n, name, text) for n, name, _, text in edits}
    lo = _line("lo = max(0, i - window + 2)", NUMBERS)
    # the slice's start one up and one down, each of its integers; nothing of the scale (a product's operand)
    assert {(lo, "lo", "lo = max(1, i - window + 2)"), (lo, "lo", "lo = max(-1, i - window + 2)"),
            (lo, "lo", "lo = max(0, i - window + 3)"), (lo, "lo", "lo = max(0, i - window + 1)")} <= changed
    assert not any(name == "scale" for _, name, _ in changed)
    for n, _, copy, text in edits:  # that line changed, every other as written
        assert [i for i, (a, b) in enumerate(zip(copy.splitlines(), NUMBERS.splitlines()), 1) if a != b] == [n]
        assert copy.splitlines()[n - 1].strip() == text


def test_a_size_read_as_an_extent_is_tried_on_every_other_axis_and_a_test_s_operand_is_left():
    half = _line("half = q.shape[0] // 2", NUMBERS)
    edits = repair.number_edits(NUMBERS, _line("x1 = q[..., :half]", NUMBERS), frozenset())
    assert {text for n, _, _, text in edits if n == half} == {f"half = q.shape[{k}] // 2" for k in range(-4, 4) if k != 0} | {
        "half = q.shape[0] // 3", "half = q.shape[0] // 1"}
    line = _line("outs.append(s.softmax(-1) @ v[:, :, lo:i + 1] if same else x1)", NUMBERS)
    edits = repair.number_edits(NUMBERS, line, frozenset())
    assert edits and not any(name == "same" for _, name, _, _ in edits)  # `same` picks a branch: a test, not an extent
    assert not repair.number_edits("def f(:\n", 1, frozenset())


MASKS = '''
import torch


def attend(scores, attention_mask, T, is_causal):
    B = scores.shape[0]
    hidden = torch.zeros(B, 1, T, T, dtype=torch.bool)
    pad = None if attention_mask is None else attention_mask[:, None, None, :]
    hidden = hidden | pad
    if is_causal:
        hidden = hidden | torch.ones(T, T, dtype=torch.bool).triu(1)
    scale = scores.new_tensor(0.5)
    return scores.masked_fill(hidden, float("-inf")) * scale


def attend_here(scores, attention_mask):
    return scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
'''


def test_the_mask_given_is_read_the_other_way_round_where_it_enters():
    line = _line("return scores.masked_fill(hidden, float(\"-inf\")) * scale", MASKS)
    pad = _line("pad = None if attention_mask is None else attention_mask[:, None, None, :]", MASKS)
    edits = repair.negation_edits(MASKS, line)
    # the parameter where it enters; never a mask the file derives (the accumulator, the causal band), a size or a number
    assert [(n, name, text, how) for n, name, _, text, how in edits] == [
        (pad, "pad", "pad = None if attention_mask is None else ~(attention_mask[:, None, None, :])", "wrap")]
    n, _, copy, text, _ = edits[0]  # that line changed, every other as written
    assert [i for i, (a, b) in enumerate(zip(copy.splitlines(), MASKS.splitlines()), 1) if a != b] == [n]
    here = _line("return scores.masked_fill(attention_mask[:, None, None, :] == 0, float(\"-inf\"))", MASKS)
    assert {(text, how) for _, _, _, text, how in repair.negation_edits(MASKS, here)} == {
        ('return scores.masked_fill(~(attention_mask[:, None, None, :] == 0), float("-inf"))', "use"),
        ('return scores.masked_fill((attention_mask[:, None, None, :] != 0), float("-inf"))', "flip")}
    # a statement that neither combines, negates nor applies a mask asks nothing
    assert not repair.negation_edits(MASKS, _line("scale = scores.new_tensor(0.5)", MASKS))
    assert not repair.negation_edits("def f(:\n", 1)


def test_a_mask_applied_the_wrong_way_round_keeps_the_finder_s_line(graded):
    # the combined mask's parts, negated where the padding mask enters, do not mend the case: the finder's
    # line (the masked_fill) stays
    path = CORPUS / "causal" / "causal_inverted_combined.py"
    assert_pointed(path, graded(path))


def test_a_mask_combined_the_wrong_way_keeps_the_finder_s_line(graded):
    # `allowed | pad` for `allowed & pad`: the accumulator negated before it would mend the traced case (no
    # causal band there), but a mask the file derives is never tried, only the one it is given
    path = CORPUS / "mqa" / "masks_combined_or.py"
    assert_pointed(path, graded(path))
