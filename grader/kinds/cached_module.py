"""Kind ``cached_module``: an ``nn.Module`` whose ``forward(x, cache=None)`` returns ``(out, cache)``,
driven by a script of calls: a prefill of several tokens, one-token decode steps and a chunk.

Every call's output is graded against the *full causal forward* of a naive reference over all the
tokens so far (``[grading] full_reference`` / ``full_object``, e.g. the GQA or MLA module), sliced to
the new tokens; the cache the call returns is graded against the exercise's own reference
(``solutions/<id>.py``) run on the whole sequence at once, cut to the tokens so far. The attempt
is fed back its own cache, as a generation loop would, always as fresh copies (never the objects it
returned); two sequences run interleaved and one call is replayed, so a module that keeps state
between calls shows; a third script starts a decode step from the reference's cache of tokens the
attempt never saw, so a cache whose values are not read shows. Outputs are named after the call
("step 3 out (pos 5)", "step 4 cache k (pos 0..8)"), so the first difference names the step and the
absolute positions where the attempt first diverged.

While the attempt runs, the child records what the structure checks need (a torch function mode
around each call, :class:`StepRecorder`): in a decode step, how many rows each watched projection
weight multiplied (``[grading] rows_of``: re-projecting the prefix defeats the cache; any operation
that combines a value of that weight with an operand of the prefix's length counts, whatever the
function); whether a tensor held per-head keys or values of the whole prefix, or the products of
the cache with ``product_of`` made more over the step than the new tokens' own (``prefix_widths``:
MLA decompressed instead of absorbed, at once or in pieces); whether the cache came back with the
repeated heads (a cache entry's ``repeated``). The judge turns them into checks whose ids start
with "structure" (verdict ``structure`` when the outputs are right), with the measured figure
against the allowed one.

Parameters are mapped to the contract's roles as in :mod:`.attention_module` (this kind extends it):
by name, else by shape with the grading process's probe. Mistakes are named edits of the reference
solution, as the attention modules' are (``[grading] edits``, its mask ``fill`` as written; two knobs
at once are both edits): a variant is the edited reference driven through the case's script as the
attempt is, the cache each call returns fed back (:meth:`CachedModule.variant`).

Exercise data (``[grading]``): ``configs``, ``knobs``, ``probe_configs``, ``edits``, ``fill``;
``prefill``, the grader's own prefill of the reference's cache that a call decoding tokens the
attempt never saw starts from (:mod:`attnprep.grader.cached_prefill`: the child never holds the
reference); ``full_reference``, ``full_object``; ``cache``, one
entry per cache tensor with its ``name``, ``shape`` (expressions of the config, ``B`` and ``T`` =
the tokens so far) and optionally ``repeated`` (the head count of a cache stored after repeat_kv);
``rows_of``; ``prefix_heads`` and ``prefix_widths``; ``product_of`` and ``product_mistake`` (the
mistake named when a product with that role's weight raises); ``small_x``, when set, one more script
(prefill 3, decode 1) whose inputs are scaled by it, where an RMSNorm's eps shows; ``pair_limit``, the
pairs of knobs tried at most (each variant runs whole scripts; ``pairs_first`` decides which).
"""

from __future__ import annotations

import importlib
import linecache
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from attnprep import exercises
from attnprep.grader import trace
from attnprep.grader import weights as W
from attnprep.grader.cached_prefill import PREFILLS
from attnprep.grader.cases import Case, generator
from attnprep.grader.cases import alone as sample_alone
from attnprep.grader.edits import knobs_of
from attnprep.grader.kinds.attention_module import AttentionGrading, AttentionModule
from attnprep.grader.kinds.base import Built, first, name_mistakes
from attnprep.grader.result import Check, Diagnosis, Name, msg
from attnprep.grader.tensors import tensors_in

# The mistakes this kind names from what it observes (the exercise lists those that apply).
REPEATED = "cache_after_repeat_kv"
REPROJECTED = "cache_prefix_reprojected"
DECOMPRESSED = "mla_decompressed_prefix"
NOT_RETURNED = "cache_not_returned"
STATEFUL = "cache_in_module_state"
WRONG_AXIS = "cache_wrong_axis"


@dataclass(frozen=True)
class Call:
    """One call of a script: the new tokens ``start .. end-1`` of the sequence ``seq`` (an input of
    the case); ``replay``: pass the cache the previous call of the sequence was given, again;
    ``given``: pass the reference's cache of the tokens before ``start`` (a cache the attempt never
    made)."""

    seq: str
    start: int
    end: int
    label: Name  # "step 2", "A step 1": said in the language from its text key
    replay: bool = False
    given: bool = False  # starts from the reference's cache of tokens 0 .. start-1, never the attempt's

    def positions(self) -> Name:
        return _pos(f"{self.start}" if self.end - self.start == 1 else f"{self.start}..{self.end - 1}")

    @property
    def part(self) -> Name:
        """The call as the divergence finder names the part of the trail it made: "step 3 (pos 6..8)"."""
        return Name(f"{self.label} ({self.positions()})", "name.part", step=self.label, pos=self.positions())


def _pos(p: str) -> Name:
    return Name(f"pos {p}", "name.pos", p=p)


@dataclass(frozen=True)
class CacheSpec:
    name: str
    shape: tuple[str, ...]  # expressions of the config, B and T (the tokens so far)
    repeated: str = ""  # the head count of a cache stored after repeat_kv, if that can happen

    @property
    def token_axis(self) -> int:
        return self.shape.index("T")


def _step(n: int, sequence: str = "", again: bool = False) -> Name:
    """The name of a call: "step 2"; of a call of one of several sequences: "A step 2", "A step 2 again"."""
    if not sequence:
        return Name(f"step {n}", "name.step", n=n)
    if again:
        return Name(f"{sequence} step {n} again", "name.seq_step_again", seq=sequence, n=n)
    return Name(f"{sequence} step {n}", "name.seq_step", seq=sequence, n=n)


def _steps(seq: str, lengths: list[int], sequence: str = "") -> list[Call]:
    calls, start = [], 0
    for n, length in enumerate(lengths, 1):
        calls.append(Call(seq, start, start + length, _step(n, sequence)))
        start += length
    return calls


# The scripts: (case name, batch and length of each sequence, calls). The first is the observed
# one: prefill 5 tokens (no head size in the configs may equal it: the observer tells the (5, 5)
# probabilities from a product's output by their shape), decode 1, a chunk of 3, decode 1. No
# total length has a factor 7, 11 or 13: graded MLA sizes keep one in every per-head width, so
# that shapes say which is which.
MAIN = Name("prefill 5, decode 1, chunk 3, decode 1", "name.script_main", a=5, b=1, c=3, d=1)
MAIN_CALLS = _steps("x", [5, 1, 3, 1])
MAIN_B, MAIN_T = 2, 10
SEQ_A, SEQ_B = _steps("x", [3, 1, 2], "A"), _steps("x2", [1, 1, 3], "B")  # B: a one-token prefill
AGAIN = Call("x", 3, 4, _step(2, "A", again=True), replay=True)  # A's step 2 once more, with the same cache
# a sequence whose first 4 tokens the attempt never saw: a decode step from the reference's cache of
# them, then a chunk of 3 from the attempt's own cache (totals 5 and 8: no factor 7, 11 or 13 either)
GIVEN = [Call("x", 4, 5, _step(1, "C"), given=True), Call("x", 5, 8, _step(2, "C"))]
SCRIPTS = (
    (MAIN, {"x": (MAIN_B, MAIN_T)}, MAIN_CALLS),
    (Name("two sequences interleaved, a call replayed", "name.script_interleaved"), {"x": (2, 6), "x2": (1, 5)},
     [SEQ_A[0], SEQ_B[0], SEQ_A[1], SEQ_B[1], AGAIN, SEQ_B[2], SEQ_A[2]]),
    (Name("decode from a cache of the reference's", "name.script_given"), {"x": (2, 8)}, GIVEN),
)
SMALL, SMALL_T, SMALL_CALLS = "small inputs: prefill 3, decode 1", 4, tuple(_steps("x", [3, 1]))
CUTS = (2, 7)  # the causality probe: tokens from here on change (inside the prefill, inside the chunk 6..8)


def _changed_from(cut: int) -> Name:
    return Name(f"{MAIN}, tokens {cut}.. changed", "name.changed.tokens", case=MAIN, n=cut)


# every name of the scripts by its text: the child's records name calls and cases as plain text
_NAMED = {str(n): n for n in (*(call.label for _, _, calls in SCRIPTS for call in calls),
                              *(call.part for _, _, calls in SCRIPTS for call in calls), *(s[0] for s in SCRIPTS),
                              *map(_changed_from, CUTS), sample_alone(MAIN, 2))}


def output_names(call: Call, specs: tuple[CacheSpec, ...]) -> list[Name]:
    """The graded outputs of one call: its output, then each cache tensor it returns."""
    whole = _pos(f"0..{call.end - 1}")
    return [Name(f"{call.label} out ({call.positions()})", "name.step_out", step=call.label, pos=call.positions())] + [
        Name(f"{call.label} cache {s.name} ({whole})", "name.step_cache", step=call.label, name=s.name, pos=whole)
        for s in specs]


class ScriptOutputs(Mapping):
    """A variant's outputs on a script of calls (name -> tensor), made call by call as they are
    read: the judge stops at the first output that differs from the attempt's, so a variant
    already wrong in the prefill is never run through the decode steps. A call that raises
    raises when its outputs are read."""

    def __init__(self, names: list[str], calls: Iterator[dict[str, torch.Tensor]]):
        self._names, self._calls, self._made = names, calls, {}

    def __getitem__(self, name: str) -> torch.Tensor:
        while name not in self._made:
            made = next(self._calls, None)
            if made is None:
                raise KeyError(name)
            self._made.update(made)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True, kw_only=True)
class CachedGrading(AttentionGrading):
    prefill: str  # the grader's own prefill of the reference's cache (cached_prefill), for a given call
    full_reference: str  # the solution module of the naive full forward every output is graded against
    full_object: str  # … and its class
    cache: tuple[dict, ...]  # one entry per cache tensor: name, shape, optionally repeated
    rows_of: tuple[str, ...] = ()  # roles whose weight must multiply the new tokens only in a decode step
    prefix_heads: str = ""  # the head count of per-head keys or values of the prefix (expression)
    prefix_widths: tuple[str, ...] = ()  # their per-head widths (expressions): decompressed, not absorbed
    product_of: str = ""  # the role whose products with the cache are counted (MLA's decompression)
    product_mistake: str = ""  # the mistake named when a product with that role's weight raises
    small_x: float = 0.0  # > 0: one more script whose inputs are scaled by it (the norms' eps shows)
    pair_limit: int = 200  # pairs of knobs the judge tries at most: each variant runs a script of calls


class CachedModule(AttentionModule):
    Grading = CachedGrading
    traits = AttentionModule.traits | {"cached"}
    stages = ()  # the absorbed and cached forms compute other intermediates: no stage shapes
    probes = frozenset({"causality", "batch", "gradients", "device", "softmax_rows"})
    pair_knobs = True  # its variants take two knobs at once: both edits made together
    mask_fills = False  # … and one fill for every mask (not a variants.MaskFills)
    outputs_by_call = True  # a prefill and its decode steps: a mistake may show in some calls only
    forward_key = "cached_module.forward_signature"
    forward_positional = 2  # x, cache

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.specs = tuple(CacheSpec(c["name"], tuple(c["shape"]), c.get("repeated", ""))
                           for c in self.grading.cache)
        self._full = None
        self._meta: dict[int, dict] = {}  # child: id(attempt) -> what the recorder watches
        self._records: dict[str, list[dict]] = {}  # child: case -> per-call records, until child_extra
        self._stateful: dict | None = None  # child: the first decode call that changed the module

    # --- shared -------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        d_model = self.configs[ci]["d_model"]
        g = generator(self.seed, ci, "cached")
        cases = []
        for name, seqs, calls in SCRIPTS:
            inputs: dict[str, Any] = {seq: torch.randn(B, T, d_model, generator=g) for seq, (B, T) in seqs.items()}
            inputs["calls"] = tuple(calls)
            main = name == MAIN
            cases.append(self._case(name, inputs, observe=main))
        base = cases[0].inputs
        for cut in CUTS:  # the calls up to the one that holds the cut: later ones hold no earlier token
            x = base["x"].clone()
            x[:, cut:] = torch.randn(MAIN_B, MAIN_T - cut, d_model, generator=g)
            calls = tuple(c for c in base["calls"] if c.start < cut)
            cases.append(self._case(_changed_from(cut), {"x": x, "calls": calls}, base=MAIN,
                                    check="causality", unchanged=self._before(cut)))
        alone = {"x": base["x"][1:2].clone(), "calls": base["calls"][:3]}
        cases.append(self._case(sample_alone(MAIN, 2), alone, base=MAIN, check="batch", base_rows=(1, 2)))
        small = float(self.grading.small_x)
        if small > 0:  # latents of mean square ~1e-5: an RMSNorm eps of 1e-5 instead of 1e-6 shows
            x = torch.randn(1, SMALL_T, d_model, generator=g) * small
            name = Name(f"{SMALL} (x × {small:g})", "name.script_small", a=3, b=1, scale=f"{small:g}")
            cases.append(self._case(name, {"x": x, "calls": SMALL_CALLS}))
        return cases

    def names(self, ci: int) -> dict[str, Any]:
        return {**super().names(ci), **_NAMED}

    def _case(self, name, inputs, observe=False, base=None, check="", unchanged=None, base_rows=None) -> Case:
        calls = inputs["calls"]
        B = inputs[calls[0].seq].shape[0]
        T0 = calls[0].end - calls[0].start
        return Case(name=name, inputs=inputs, queries=torch.ones(B, T0, dtype=torch.bool), seq=(T0, T0), graded={},
                    base=base, unchanged=unchanged, base_rows=base_rows, check=check, observe=observe, picture=observe)

    def _before(self, cut: int) -> dict[str, torch.Tensor]:
        """Per output of the main script, where its tokens come before ``cut`` (causality). The
        caches are graded against the reference anyway; here only the outputs count, so that a
        cache in the wrong order is not taken for a leak."""
        masks = {}
        for call in MAIN_CALLS:
            names = output_names(call, self.specs)
            masks[names[0]] = (torch.arange(call.start, call.end) < cut).view(1, -1, 1)
            for spec, name in zip(self.specs, names[1:]):
                masks[name] = torch.zeros((1,) * len(spec.shape), dtype=torch.bool)
        return masks

    def part_axis_names(self, ci: int, case: Case, part: str) -> dict[str, int]:
        """:meth:`axis_names` for one call of the script (its :attr:`Call.part`): ``T`` its new
        tokens, ``S`` the keys so far (``S`` only past the prefill), ``B`` the batch of its
        sequence, each named only when more than one and no other axis has its size; {} for a part
        that is no call of the case."""
        call = next((c for c in case.inputs["calls"] if c.part == part), None)
        if call is None:
            return {}
        new, total = call.end - call.start, call.end
        others = {k: v for k, v in self.axis_names(ci, case).items() if k not in ("B", "T")}
        B = case.inputs[call.seq].shape[0]
        axes = {"B": B} if B > 1 else {}  # a size of 1 names nothing: (1, 1, 4) is no (B, T, 4)
        if new > 1 and new not in others.values():  # a chunk of 3 with 3 heads: which is which depends on the layout
            axes["T"] = new
        if total > 1 and total != new and total not in others.values():
            axes["S"] = total
        # an axis of the call's size is named by neither: six keys so far with a rope width of 6 are
        # no (B, rope, rope)
        others = {k: v for k, v in others.items() if v not in (new, total) or v == 1}
        return {**axes, **others}

    def cache_shape(self, ci: int, spec: CacheSpec, B: int, T: int) -> tuple[int, ...]:
        args = {**self.configs[ci], "B": B, "T": T}
        return tuple(exercises.evaluate(e, args) for e in spec.shape)

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        d_model = self.configs[ci]["d_model"]
        shapes = {}
        for call in case.inputs["calls"]:
            B = case.inputs[call.seq].shape[0]
            names = output_names(call, self.specs)
            shapes[names[0]] = (B, call.end - call.start, d_model)
            for spec, name in zip(self.specs, names[1:]):
                shapes[name] = self.cache_shape(ci, spec, B, call.end)
        return shapes

    def call(self, module, case: Case):
        """The first call of the case's script alone (the mapping probe)."""
        c = case.inputs["calls"][0]
        return module(case.inputs[c.seq][:, c.start:c.end].clone())

    # --- child --------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel) -> Built:
        built = super().build(namespace, ci, channel)
        module = built.attempt
        grading = self.grading
        watched = list(grading.rows_of) + ([grading.product_of] if grading.product_of else [])
        config = self.configs[ci]
        prefix = None
        if grading.prefix_widths:
            prefix = {"heads": exercises.evaluate(grading.prefix_heads, config),
                      "widths": [[w, exercises.evaluate(w, config)] for w in grading.prefix_widths]}
        self._meta[id(module)] = {
            "module": module,
            "weights": {role: _watched_weight(module, built, role) for role in dict.fromkeys(watched)
                        if role in built.mapping and len(built.rows.get(role, [None])) == 1},
            # a weight stored (in, out) and used as x @ W (GPT-2's Conv1D) takes its inputs' features
            # from its first side
            "in_features": {role: W.params_of(module, built.mapping[role])[0].shape[0 if role in built.transposed else -1]
                            for role in dict.fromkeys(watched) if role in built.mapping and role not in built.rows},
            "rows_of": list(grading.rows_of),
            "prefix": prefix,
            "file": namespace.get("__file__") or "",
            "product_mistake": grading.product_mistake,
            "product_of": grading.product_of,
            "repeated": {s.name: exercises.evaluate(s.repeated, config) for s in self.specs if s.repeated},
            "expected": {s.name: s for s in self.specs},
            "config": ci,
            "zero_bias": frozenset(built.zero_bias),
        }
        return built

    def run(self, attempt, case: Case) -> dict[str, Any]:
        meta = self._meta.get(id(attempt))
        outputs: dict[str, Any] = {}
        given: dict[str, Any] = {}  # seq -> the cache its last call was given
        current: dict[str, Any] = {}  # seq -> the cache its last call returned
        records = []
        for call in case.inputs["calls"]:
            x = case.inputs[call.seq][:, call.start:call.end]
            if call.given:
                current[call.seq] = self._given_to(attempt, meta, case.inputs[call.seq][:, :call.start])
            kept = given.get(call.seq) if call.replay else current.get(call.seq)
            given[call.seq] = kept
            cache = fresh(kept)  # never an object a call returned: a copy of it
            trace.mark(call.part)  # when the divergence finder traces the script: where each call starts
            recorder = StepRecorder(meta, self.specs, cache, call, x.shape[0]) if meta is not None else None
            state = _state(attempt)
            try:
                if recorder is None:
                    result = attempt(x.clone(), cache)
                else:
                    with recorder:
                        result = attempt(x.clone(), cache)
            except Exception as exc:
                named = recorder.named_on_error() if recorder is not None else []
                if not named and self._stateful is not None:  # an earlier call kept state in the module
                    named = [(STATEFUL, "cached_module.evidence_state", self._stateful)]
                bad = next((r for r in records if r.get("repeated")), None)
                if not named and bad is not None:  # fed back a cache of the repeated heads, the next call breaks on it
                    name, got, expected = bad["repeated"]
                    named = [(REPEATED, "cached_module.cache_heads_bad", {
                        "step": bad["label"], "case": bad["case"], "name": name, "got": str(tuple(got)),
                        "heads": got[1], "expected": str(tuple(expected)), "allowed": expected[1]})]
                name_mistakes(exc, named)
                raise
            out, returned = _split(result)
            entries = _entries(returned, len(self.specs))
            record = recorder.record() if recorder is not None else {}
            record.update(case=case.name, label=call.label, B=x.shape[0], new=call.end - call.start, total=call.end,
                          decode=call.start > 0)
            if returned is None or not isinstance(result, (tuple, list)):
                record["returned"] = "none"
            elif cache is not None and (returned is cache or any(
                    isinstance(e, torch.Tensor) and any(e is c for c in _entries(cache, len(self.specs))) for e in entries)):
                record["returned"] = "same"
            elif call.start > 0 and meta is not None and record.get("cache_cat") and entries and all(
                    isinstance(e, torch.Tensor) and tuple(e.shape) == self.cache_shape(meta["config"], spec, x.shape[0], call.end - call.start)
                    for spec, e in zip(self.specs, entries)):
                # the cache it was given grown by the new tokens, but only the new ones returned
                record["returned"] = "new_only"
            changed = _changed(state, _state(attempt))
            if changed and call.start > 0:  # a decode step changed the module: state between calls
                record["state"] = changed
                self._stateful = {"step": call.label, "case": case.name, "attribute": changed[0],
                                  "before": changed[1], "after": changed[2]}
            names = output_names(call, self.specs)
            outputs[names[0]] = out
            if meta is not None:  # how the attempt lays its cache out, for a cache it is given
                for spec, entry in zip(self.specs, entries):
                    if isinstance(entry, torch.Tensor):
                        expected = self.cache_shape(meta["config"], spec, x.shape[0], call.end)
                        meta.setdefault("layouts", {})[spec.name] = _layout(tuple(entry.shape), expected)
            for spec, name, entry in zip(self.specs, names[1:], entries):
                if meta is not None and spec.name in meta["repeated"] and isinstance(entry, torch.Tensor):
                    expected = self.cache_shape(meta["config"], spec, x.shape[0], call.end)
                    reduced = _unrepeat(entry, expected)
                    if reduced is not None:
                        record.setdefault("repeated", [spec.name, list(entry.shape), list(expected)])
                        entry = reduced
                outputs[name] = entry
            current[call.seq] = returned
            if meta is not None and isinstance(returned, (tuple, list)):
                meta["entries"] = max(meta.get("entries", 0), len(returned))
            records.append(record)
        self._records[case.name] = records
        return outputs

    def _given_to(self, attempt, meta: dict | None, prefix: torch.Tensor):
        """The cache a ``given`` call starts from: the reference's, on the device of the tokens, laid
        out as the attempt's own caches were (heads repeated, axes in another order).
        An attempt whose caches carried more than the contract's tensors (its hidden states, say)
        gets its own prefill's cache of ``prefix`` (run unwatched), the contract's tensors in it
        replaced by the reference's."""
        ci, zero_bias = (meta["config"], meta["zero_bias"]) if meta is not None else (0, frozenset())
        layouts = meta.get("layouts", {}) if meta is not None else {}
        with torch._C.DisableTorchFunction():  # grader's work: no observer, recorder or tracer sees it
            reference = tuple(t.to(prefix.device) for t in self.given_cache(ci, zero_bias, prefix.cpu()))
            # laid out as the attempt's own caches were (heads repeated, axes in another order): those
            # mistakes are named elsewhere; here the question is whether the cache's values are read
            reference = tuple(_laid_out(t, layouts.get(spec.name)) for spec, t in zip(self.specs, reference))
        n = len(self.specs)
        if meta is None or meta.get("entries", 0) <= n:
            return reference
        try:
            with torch._C.DisableTorchFunction():
                own = _split(attempt(prefix.clone(), None))[1]
        except Exception:
            return reference
        if not isinstance(own, (tuple, list)) or len(own) <= n:
            return reference
        return type(own)([*reference, *own[n:]]) if type(own) in (tuple, list) else reference

    def given_cache(self, ci: int, zero_bias, prefix: torch.Tensor):
        """The reference's cache of the tokens ``prefix`` (B, T, d_model), made by the grader's own
        prefill (:mod:`attnprep.grader.cached_prefill`): the child that runs the attempt never holds
        the reference, and the divergence finder's reference trail does not count it as steps of
        its own."""
        prefill = PREFILLS[self.grading.prefill]
        with torch.no_grad():
            return prefill(self.configs[ci], self.role_weights(ci, zero_bias), prefix)

    def child_extra(self, attempt) -> dict | None:
        steps = [r for records in self._records.values() for r in records]
        self._records = {}
        return {"steps": steps}

    # --- parent -------------------------------------------------------------------------------

    def solution(self):
        if self._full is None:
            module = importlib.import_module(f"attnprep.solutions.{self.grading.full_reference}")
            self._full = getattr(module, self.grading.full_object)
        return super().solution()

    def _loaded(self, cls, ci: int, weights: dict):
        return W.load_roles(cls(**self.configs[ci]).eval(), weights)

    def _modules(self, ci: int, zero_bias):
        solution = self.solution()
        weights = self.role_weights(ci, zero_bias)
        return self._loaded(self._full, ci, weights), self._loaded(solution, ci, weights)

    def reference(self, ci: int, zero_bias=frozenset()):
        full, own = self._modules(ci, zero_bias)

        def run(case: Case) -> dict[str, torch.Tensor]:
            outputs: dict[str, torch.Tensor] = {}
            caches: dict[str, tuple] = {}
            for call in case.inputs["calls"]:
                x = case.inputs[call.seq]
                names = output_names(call, self.specs)
                # the full causal forward over every token so far, at the new tokens
                outputs[names[0]] = first(full(x[:, :call.end], None, True))[:, call.start:call.end]
                if call.seq not in caches:  # the reference's cache of the whole sequence, in one call
                    caches[call.seq] = own(x)[1]
                for spec, name, entry in zip(self.specs, names[1:], caches[call.seq]):
                    outputs[name] = entry.narrow(spec.token_axis, 0, call.end)
            return outputs

        return run

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        """The exercise's own reference driven through the case's script as :meth:`run` drives the
        attempt (the new tokens of each call, its own cache fed back, a replayed call given the same
        cache again), so that the divergence finder's two trails line up call by call."""
        _, own = self._modules(ci, zero_bias)

        def run(case: Case) -> dict[str, Any]:
            outputs: dict[str, Any] = {}
            given: dict[str, Any] = {}
            current: dict[str, Any] = {}
            for call in case.inputs["calls"]:
                x = case.inputs[call.seq][:, call.start:call.end]
                if call.given:
                    current[call.seq] = self.given_cache(ci, zero_bias, case.inputs[call.seq][:, :call.start])
                cache = given.get(call.seq) if call.replay else current.get(call.seq)
                given[call.seq] = cache
                trace.mark(call.part)
                out, returned = _split(own(x.clone(), fresh(cache)))
                names = output_names(call, self.specs)
                outputs[names[0]] = out
                outputs.update(zip(names[1:], _entries(returned, len(self.specs))))
                current[call.seq] = returned
            return outputs

        return run

    def reference_grads(self, ci: int, zero_bias, case: Case):
        return None  # a script of calls: gradients are graded for their presence only

    def probe_output(self, ci: int, zero_bias: frozenset, probe: Case) -> torch.Tensor:
        full, _ = self._modules(ci, zero_bias)
        c = probe.inputs["calls"][0]
        return first(full(probe.inputs[c.seq][:, c.start:c.end], None, True))

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the mistake ``knob`` (or the knobs of a tuple, made together: both
        edits), its mask filled with ``fill``, driven through the case's script as
        :meth:`trail_reference` drives the reference: the new tokens of each call, the cache the
        previous call of its sequence returned fed back (a replayed call given the same one again), a
        ``given`` call the reference's cache laid out as this variant's own caches are. Its module
        is compiled and built when first read (edits that clash raise there, which names nothing),
        once per knob set, fill and config."""
        knobs = knobs_of(knob)
        entries = len(self.specs)

        def run(case: Case) -> ScriptOutputs:
            def calls():
                step = self._edited_module(ci, zero_bias, knobs, fill)
                given: dict[str, Any] = {}
                current: dict[str, Any] = {}
                for call in case.inputs["calls"]:
                    if call.given:  # the reference's cache, laid out as this variant's own
                        prefix = case.inputs[call.seq][:, :call.start]
                        own = _entries(_split(step(prefix, None))[1], entries)
                        shapes = [self.cache_shape(ci, spec, prefix.shape[0], call.start) for spec in self.specs]
                        current[call.seq] = tuple(_laid_out(t, _layout(tuple(o.shape), shape)) for t, o, shape
                                                  in zip(self.given_cache(ci, zero_bias, prefix), own, shapes))
                    cache = given.get(call.seq) if call.replay else current.get(call.seq)
                    given[call.seq] = cache
                    out, returned = _split(step(case.inputs[call.seq][:, call.start:call.end], cache))
                    current[call.seq] = returned
                    yield dict(zip(output_names(call, self.specs), [out, *_entries(returned, entries)]))

            names = [n for call in case.inputs["calls"] for n in output_names(call, self.specs)]
            return ScriptOutputs(names, calls())

        return run

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        T = case.queries.shape[1]  # the prefill of the observed script
        return torch.tril(torch.ones(T, T, dtype=torch.bool))

    def extra_checks(self, extra: dict) -> list[Check]:
        steps = _steps_of(extra)
        checks = []
        if any(s.repeated for s in self.specs):
            bad = next((s for s in steps if s.get("repeated")), None)
            if bad is None:
                checks.append(Check("structure_cache_heads", True, msg("cached_module.cache_heads_ok")))
            else:
                name, got, expected = bad["repeated"]
                checks.append(Check("structure_cache_heads", False, msg(
                    "cached_module.cache_heads_bad", step=bad["label"], case=bad["case"], name=name, got=str(tuple(got)),
                    heads=got[1], expected=str(tuple(expected)), allowed=expected[1])))
        if self.grading.rows_of:
            bad = next(((s, role, r) for s in steps if s.get("decode") for role, r in s.get("rows", {}).items()
                        if r[0] > s["B"] * s["new"]), None)
            if bad is None:
                checks.append(Check("structure_projection_rows", True, msg(
                    "cached_module.rows_ok", roles=" / ".join(self.grading.rows_of))))
            else:
                s, role, (rows, line, code) = bad
                checks.append(Check("structure_projection_rows", False, msg(
                    "cached_module.rows_bad", step=s["label"], case=s["case"], role=role, rows=rows, line=line, code=code,
                    allowed=s["B"] * s["new"], B=s["B"], new=s["new"], total=s["total"])))
        if self.grading.prefix_widths:
            bad = next((s for s in steps if s.get("decode") and s.get("prefix")), None)
            spread = next((s for s in steps if s.get("decode") and _decompressed(s)), None)
            if bad is None and spread is not None:  # a token, a sample or a head at a time: counted over the step
                elements, line, code, allowed, width = spread["decompressed"][:5]
                checks.append(Check("structure_prefix_heads", False, msg(
                    "cached_module.prefix_bad_total", step=spread["label"], case=spread["case"], elements=elements,
                    total=spread["total"], line=line, code=code, allowed=allowed, width=width, B=spread["B"],
                    new=spread["new"], role=self.grading.product_of)))
            elif bad is None:
                checks.append(Check("structure_prefix_heads", True, msg("cached_module.prefix_ok")))
            else:
                shape, width, line, code = bad["prefix"]
                checks.append(Check("structure_prefix_heads", False, msg(
                    "cached_module.prefix_bad", step=bad["label"], case=bad["case"], shape=str(tuple(shape)),
                    width=width, total=bad["total"], line=line, code=code)))
        return checks

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        steps = _steps_of(extra)
        found = []
        for check in self.extra_checks(extra):
            if check.passed is False:
                mistake = {"structure_cache_heads": REPEATED, "structure_projection_rows": REPROJECTED,
                           "structure_prefix_heads": DECOMPRESSED}[check.id]
                found.append(Diagnosis(mistake, (check.message,)))
        axis = next(((s, c) for s in steps for c in s.get("cats", [])), None)
        if axis is not None:
            s, (name, dim, token_axis, line, code) = axis
            found.append(Diagnosis(WRONG_AXIS, (msg("cached_module.evidence_axis", step=s["label"], name=name, dim=dim,
                                                     axis=token_axis, line=line, code=code),)))
        lost = next((s for s in steps if s.get("returned")), None)
        if lost is not None:
            key = {"none": "cached_module.evidence_no_cache", "new_only": "cached_module.evidence_new_only"}.get(
                lost["returned"], "cached_module.evidence_same_cache")
            found.append(Diagnosis(NOT_RETURNED, (msg(key, step=lost["label"], case=lost["case"]),)))
        stateful = next((s for s in steps if s.get("state")), None)
        if stateful is not None:
            attribute, before, after = stateful["state"]
            found.append(Diagnosis(STATEFUL, (msg("cached_module.evidence_state", step=stateful["label"],
                                                   case=stateful["case"], attribute=attribute, before=before,
                                                   after=after),)))
        return found


def _decompressed(step: dict) -> bool:
    """The step's products of the cache with the decompression weight made more elements than the
    new tokens' own per-head keys and values could: the prefix was decompressed, in whatever pieces."""
    d = step.get("decompressed")
    return isinstance(d, list) and len(d) >= 5 and isinstance(d[0], int) and isinstance(d[3], int) and d[0] > d[3]


def _steps_of(extra: dict) -> list[dict]:
    """The child's records of each call, with the call's and the case's names as the Names they are."""
    steps = extra.get("steps") if isinstance(extra, dict) else None
    return [{**s, **{k: _NAMED.get(s[k], s[k]) for k in ("label", "case") if isinstance(s.get(k), str)}}
            for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def fresh(cache):
    """A copy of a cache as a call is given it: its tensors cloned, tuples, lists and dicts rebuilt
    around them, anything else as it is. No call receives an object an earlier call returned, so
    an attempt that keeps its keys elsewhere, found again by the id of what it returned, finds
    nothing, and one that changes its cache in place changes only its own copy."""
    if isinstance(cache, torch.Tensor):
        return cache.clone()
    if isinstance(cache, tuple) and hasattr(cache, "_fields"):  # a named tuple
        return type(cache)(*(fresh(c) for c in cache))
    if type(cache) in (tuple, list):
        return type(cache)(fresh(c) for c in cache)
    if type(cache) is dict:
        return {k: fresh(v) for k, v in cache.items()}
    return cache


def _split(result) -> tuple[Any, Any]:
    """(out, cache) of what a call returned; a bare tensor returned no cache."""
    if isinstance(result, (tuple, list)):
        return (result[0] if result else None), (result[1] if len(result) > 1 else None)
    return result, None


def _entries(cache, n: int) -> list:
    """The n cache tensors of a returned cache: a (k, v) tuple or list; anything else is graded as it
    is in the first place (a stacked tensor, None) and nothing in the others."""
    if isinstance(cache, (tuple, list)) and len(cache) >= n:
        return list(cache[:n])
    return [cache] + [None] * (n - 1)


def _layout(got: tuple[int, ...], expected: tuple[int, ...]) -> tuple | None:
    """How a cache tensor of shape ``got`` is laid out against the contract's ``expected``: None
    (as the contract says, or unknown), ("repeat", axis, times) for one axis a multiple of its
    size, ("permute", order) for the same sizes in another order (``got[i] = expected[order[i]]``)."""
    if got == expected or len(got) != len(expected):
        return None
    differ = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    if len(differ) == 1 and expected[differ[0]] and got[differ[0]] % expected[differ[0]] == 0:
        return ("repeat", differ[0], got[differ[0]] // expected[differ[0]])
    if sorted(got) != sorted(expected):
        return None
    order, free = [], list(range(len(expected)))
    for i, g in enumerate(got):  # an axis keeps its place when its size allows (equal sizes stay in order)
        j = i if i in free and expected[i] == g else next(j for j in free if expected[j] == g)
        free.remove(j)
        order.append(j)
    return ("permute", tuple(order))


def _laid_out(t: torch.Tensor, layout: tuple | None) -> torch.Tensor:
    """A contract-shaped cache tensor in the layout :func:`_layout` found."""
    if layout is None:
        return t
    if layout[0] == "repeat":
        return t.repeat_interleave(layout[2], dim=layout[1])
    return t.permute(*layout[1]).contiguous()


def _unrepeat(entry: torch.Tensor, expected: tuple[int, ...]):
    """The cache tensor without its repeated heads, if it is ``expected`` with one axis repeated
    (copies next to each other, as repeat_kv / repeat_interleave makes them); else None."""
    got = tuple(entry.shape)
    if len(got) != len(expected) or got == expected:
        return None
    differ = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    if len(differ) != 1:
        return None
    axis = differ[0]
    if got[axis] % expected[axis]:
        return None
    grouped = entry.unflatten(axis, (expected[axis], got[axis] // expected[axis]))
    head = grouped.narrow(axis + 1, 0, 1)
    if not torch.equal(grouped, head.expand_as(grouped)):
        return None
    return head.squeeze(axis + 1)


# --- what the child watches -----------------------------------------------------------------------

_MODULE_KEYS = frozenset(vars(torch.nn.Module())) | {"training"}


def _describe(value) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value), tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return tuple(_describe(v) for v in value)
    if isinstance(value, (int, float, str, type(None))):
        return value
    return type(value).__name__


def _state(module) -> dict[str, Any]:
    """The attributes of the attempt's modules a call could keep state in: tensors, tuples of them,
    numbers (a cache kept in self, a position counter), buffers."""
    if not isinstance(module, torch.nn.Module):
        return {}
    state = {}
    for prefix, sub in module.named_modules():
        where = f"self.{prefix}." if prefix else "self."
        for key, value in vars(sub).items():
            if key not in _MODULE_KEYS:
                state[where + key] = _describe(value)
        for key, value in sub._buffers.items():
            state[where + key] = _describe(value)
    return state


def _shown(value) -> str:
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "tensor":
        return f"a tensor {value[2]}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_shown(v) for v in value) + ")"
    return repr(value)


def _changed(before: dict, after: dict) -> list | None:
    """[attribute, before, after] of the first attribute a call changed, as text; None if none."""
    for key, value in after.items():
        if before.get(key, "<unset>") != value:
            old = before.get(key, "<unset>")
            return [key, "unset" if old == "<unset>" else _shown(old), _shown(value)]
    return None


_MATMULS = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.mm,
            torch.Tensor.mm, torch.bmm, torch.Tensor.bmm, torch.einsum, torch.addmm, torch.Tensor.addmm, torch.baddbmm,
            torch.Tensor.baddbmm, torch.tensordot, torch.mv, torch.Tensor.mv, torch.inner}
_CATS = {torch.cat, torch.concat, torch.concatenate}


def _watched_weight(module, built: Built, role: str) -> torch.Tensor:
    """The weight of the layer that computes ``role``: its own, or a layer stacking it with others
    (``kv_proj`` for k_proj and v_proj: the rows of what it multiplies are counted alike)."""
    if role in built.rows:
        return W.params_of(module, built.rows[role][0][0])[0]
    return W.params_of(module, built.mapping[role])[0]  # a module's weight, or a bare matrix


class StepRecorder(TorchFunctionMode):
    """Around one call of the attempt: the rows each watched weight multiplies, concatenations of
    the cache it was given, the first tensor holding per-head keys or values of the whole prefix,
    and the operation that raised, if one did. Never changes what the attempt computes."""

    def __init__(self, meta: dict, specs: tuple[CacheSpec, ...], cache, call: Call, batch: int):
        super().__init__()
        self.label, self.batch = call.label, batch
        self.file = meta["file"]
        # tensors computed from parameters alone (W.T, W.view(...), torch.cat([Wk, Wv])), with the
        # watched roles they come from; they hold no tokens, so the prefix check skips them
        params = [p for p in meta["module"].parameters()] if isinstance(meta["module"], torch.nn.Module) else []
        self.keep = params + list(meta["weights"].values())  # hold every tracked tensor: ids stay unique
        self.derived: dict[int, frozenset[str]] = {id(p): frozenset() for p in params}
        self.derived.update({id(w): frozenset({role}) for role, w in meta["weights"].items()})
        self.in_features = {role: meta.get("in_features", {}).get(role, w.shape[-1]) for role, w in meta["weights"].items()}
        self.counted = set(meta["rows_of"])
        self.product_mistake = meta["product_mistake"]
        self.cache_ids = {}
        for spec, entry in zip(specs, _entries(cache, len(specs))):
            if isinstance(entry, torch.Tensor):
                self.cache_ids[id(entry)] = (spec.name, spec.token_axis)
                self.keep.append(entry)
        self.tainted = set(self.cache_ids)  # computed from the cache: where the prefix's keys can be
        self.prefix = meta["prefix"] if call.start > 0 else None
        self.total, self.past = call.end, call.start
        # sizes that only the tokens before this call give an axis (alone or times the batch): an
        # operand with one of them, combined with a watched weight, re-projects the prefix
        new = call.end - call.start
        ordinary = {1, batch, new, batch * new, *self.in_features.values()}
        prefix_sizes = {call.start, call.end, batch * call.start, batch * call.end}
        self.prefix_sizes = prefix_sizes - ordinary if call.start else set()
        self.product_of = meta.get("product_of", "")
        self.decompressed: list | None = None  # [elements, line, code]: products of the cache with product_of
        self.rows: dict[str, list] = {}
        self.cats: list[list] = []
        self.cache_cat = False  # a cache tensor it was given was concatenated with something
        self.prefix_hit: list | None = None
        self.failure: dict | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            out = func(*args, **kwargs)
        except Exception:
            if self.failure is None:
                try:
                    self.failure = self._failed(func, args, kwargs)
                except Exception:  # observation must never change what the attempt computes
                    pass
            raise
        try:
            self._record(func, args, kwargs, out)
        except Exception:
            pass
        return out

    def _where(self) -> tuple[int, str]:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.file:
                return frame.f_lineno, linecache.getline(self.file, frame.f_lineno).strip()
            frame = frame.f_back
        return 0, ""

    def _operands(self, func, args, kwargs) -> tuple[list, list]:
        """(tracked roles' operands, the other operands) of a product."""
        if func is F.linear:
            weight = kwargs.get("weight", args[1] if len(args) > 1 else None)
            inputs = [kwargs.get("input", args[0] if args else None)]
            tracked = [weight] if isinstance(weight, torch.Tensor) else []
        elif func is torch.einsum:
            operands = list(args[1:])
            if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
                operands = list(operands[0])
            tracked, inputs = operands, operands
        elif func in (torch.addmm, torch.Tensor.addmm, torch.baddbmm, torch.Tensor.baddbmm):
            tracked = inputs = list(args[1:3])
        else:
            tracked = inputs = list(args[:2])
        tracked = [t for t in tracked if isinstance(t, torch.Tensor) and id(t) in self.derived]
        others = [t for t in inputs if isinstance(t, torch.Tensor) and id(t) not in self.derived]
        return tracked, others

    def _record(self, func, args, kwargs, out) -> None:
        inputs = tensors_in((args, kwargs))
        if self.prefix is not None:
            self._prefix(inputs, out)
        if self.prefix_sizes and self.counted:
            self._reprojected(inputs)
        if func in _MATMULS:
            tracked, others = self._operands(func, args, kwargs)
            roles = frozenset().union(*(self.derived[id(t)] for t in tracked)) if tracked else frozenset()
            for role in roles & self.counted:
                if not others:
                    continue
                # the rows of one product: more than the new tokens means the prefix went through
                # again (the same new tokens projected twice is waste, not a re-projected prefix)
                rows = others[0].numel() // max(self.in_features[role], 1)
                entry = self.rows.get(role)
                if entry is None or rows > entry[0]:
                    self.rows[role] = [rows, *self._where()]
        else:
            if inputs and all(map(self.derived.__contains__, map(id, inputs))):  # parameters only
                roles = frozenset().union(*(self.derived[id(t)] for t in inputs))
                for t in tensors_in(out):
                    self.derived[id(t)] = roles
                    self.keep.append(t)
            if func in _CATS:
                self._cat(args, kwargs)

    def _reprojected(self, inputs: list[torch.Tensor]) -> None:
        """Any operation (a product, a convolution, a multiply then a sum …) that combines a value
        computed from a watched weight alone with one that has an axis of the prefix's length:
        the prefix goes through that projection again. Counted as the rows of the prefix."""
        roles = frozenset()
        for t in inputs:
            roles |= self.derived.get(id(t), frozenset())
        roles &= self.counted
        if not roles:
            return
        for t in inputs:
            if id(t) in self.derived:
                continue
            sizes = [d for d in t.shape if d in self.prefix_sizes]
            if not sizes:
                continue
            d = max(sizes)
            rows = d if d in (self.batch * self.past, self.batch * self.total) and d not in (self.past, self.total) \
                else self.batch * d
            for role in roles:
                entry = self.rows.get(role)
                if entry is None or rows > entry[0]:
                    self.rows[role] = [rows, *self._where()]
            return

    def _prefix(self, inputs: list[torch.Tensor], out) -> None:
        """Follow what is computed from the cache (``inputs``: the call's tensors); note the first
        such tensor that holds per-head keys or values of every token so far, and count the
        elements of every product of such a tensor with the weight ``product_of`` (per-head keys
        or values, a token or a head at a time as well as all at once)."""
        if self.tainted.isdisjoint(map(id, inputs)):  # (asked of every call: the loop in C)
            return
        if self.product_of and any(self.product_of in self.derived.get(id(t), ()) for t in inputs):
            made = sum(t.numel() for t in tensors_in(out))
            if self.decompressed is None:
                self.decompressed = [made, *self._where()]
            else:
                self.decompressed[0] += made
        for t in tensors_in(out):
            self.tainted.add(id(t))
            self.keep.append(t)
            if self.prefix_hit is None:
                width = self._per_head_prefix(tuple(t.shape))
                if width:
                    self.prefix_hit = [list(t.shape), width, *self._where()]

    def _cat(self, args, kwargs) -> None:
        seq = kwargs.get("tensors", args[0] if args else ())
        # numpy's `axis=` is torch.cat's alias of `dim=` (torch.cat(ts, axis=1) concatenates on dim 1)
        dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else 0))
        if not isinstance(seq, (list, tuple)) or not isinstance(dim, int):
            return
        for t in seq:
            if isinstance(t, torch.Tensor) and id(t) in self.cache_ids:
                self.cache_cat = True
                name, token_axis = self.cache_ids[id(t)]
                axis = dim % t.dim() if t.dim() else dim
                # the wrong axis: not the contract's token axis, nor the axis that holds the cached
                # tokens in the attempt's own layout (a (B, T, G, D) cache is a layout slip)
                wrong = axis != token_axis and (axis >= t.dim() or t.shape[axis] != self.past)
                if wrong and len(self.cats) < 4:
                    self.cats.append([name, axis, token_axis, *self._where()])

    def _per_head_prefix(self, shape: tuple[int, ...]) -> str:
        """The width (e.g. "qk_nope_head_dim") when ``shape`` holds per-head keys or values of all
        the tokens so far: the total length (alone, or merged with the batch and/or the heads)
        together with the heads and a per-head width, or with heads × width."""
        H, B, total = self.prefix["heads"], self.batch, self.total
        for i, d in enumerate(shape):
            if d % total or d // total not in (1, B, H, B * H):
                continue
            heads_merged = H > 1 and d // total in (H, B * H)
            rest = list(shape[:i] + shape[i + 1:])
            for name, w in self.prefix["widths"]:
                shown = f"num_heads × ({name})" if "+" in name else f"num_heads × {name}"
                if H * w in rest:
                    return shown
                if w in rest:
                    others = list(rest)
                    others.remove(w)
                    if heads_merged or H in others or B * H in others:
                        return shown
        return ""

    def _failed(self, func, args, kwargs) -> dict | None:
        if func in _CATS:
            self._cat(args, kwargs)
            return {"kind": "cat"} if self.cats else None  # named by named_on_error
        if func in _MATMULS:
            tracked, others = self._operands(func, args, kwargs)
            if tracked:
                line, code = self._where()
                shapes = [tuple(t.shape) for t in tensors_in((args, kwargs))[:3]]
                roles = sorted(frozenset().union(*(self.derived[id(t)] for t in tracked)))
                return {"kind": "product", "line": line, "code": code, "shapes": ", ".join(map(str, shapes)),
                        "role": " / ".join(roles) or "a"}
        return None

    def named_on_error(self) -> list[tuple[str, str, dict]]:
        """The mistakes behind an exception the call raised, as far as this step saw them."""
        wrong = self.cats[0] if self.cats else None
        if wrong is not None:
            name, dim, token_axis, line, code = wrong
            return [(WRONG_AXIS, "cached_module.evidence_axis",
                     {"step": self.label, "name": name, "dim": dim, "axis": token_axis, "line": line, "code": code})]
        if self.failure and self.failure["kind"] == "product" and self.product_mistake:
            f = self.failure
            return [(self.product_mistake, "cached_module.evidence_product",
                     {"line": f["line"], "code": f["code"], "shapes": f["shapes"], "role": f["role"]})]
        return []

    def record(self) -> dict:
        out: dict[str, Any] = {}
        if self.rows:
            out["rows"] = {role: list(r) for role, r in self.rows.items()}
        if self.cats:
            out["cats"] = [list(c) for c in self.cats]
        if self.cache_cat:
            out["cache_cat"] = True
        if self.prefix_hit:
            out["prefix"] = self.prefix_hit
        if self.decompressed and self.prefix is not None:
            # the most the new tokens' own per-head keys and values could take: B·T_new·heads·width
            name, width = max(self.prefix["widths"], key=lambda w: w[1])
            allowed = self.batch * (self.total - self.past) * self.prefix["heads"] * width
            out["decompressed"] = [*self.decompressed, allowed, name]
        return out


KIND = CachedModule
