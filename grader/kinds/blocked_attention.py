"""Kind ``blocked_attention``: one function ``attention(q, k, v, is_causal=False, block_size=…)``
over ``q (B, H, L, D)``, ``k, v (B, H, S, D)`` that must equal ``softmax(q·kᵀ / sqrt(D))·v``
(``is_causal`` aligned top-left, as torch's SDPA) *and* compute it by blocks.

Outputs are graded on cases of several (L, S, block_size), with and without ``is_causal``, plus a
case of large integer scores (where a max that is not carried from block to block overflows), the
causality and batch probes, gradients reaching q, k, v and device placement; every query row of
every case is graded, the long ones' too. The structure is measured in the child while the attempt
runs: on the long cases of config 0 a :class:`Allocations` dispatch mode sees every aten op's
outputs and keeps the largest newly allocated storage (views of the inputs or of earlier tensors do
not count) and the peak of the elements held at once by the storages allocated meanwhile and still
alive, each with the attempt's line that made it. On the grading side
:meth:`BlockedAttention.extra_checks` compares them with ``B·H·L·max(D, block_size)`` (check
``structure_memory``, verdict ``structure`` when the outputs are right): tiles of (block_q,
block_k) or (L, block_k) fit, an (L, S) score matrix or mask and (block, S) rows do not; held at
once, that bound or TILES_AT_ONCE times the largest tensor (a step's working tiles) fit, a list
that keeps every key block's scores (tiles or rows, for a second pass) does not.

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{ old, new }`` substitutions of the solution's text, each found exactly once); a knob's variant is
the edited reference called as the attempt is, its mask filled with the fill tried (``[grading]
fill`` names the reference's), and two knobs at once are both edits made together. What an edit
cannot say stays here: the structure measured while the attempt runs, and the cases.

Exercise data (``[grading]``): ``configs`` (batch, heads, dim); ``shapes``, the (L, S, block_size)
of the cases (block_size 0: the function's default); ``stability``, (L, S, block_size) of the
large-score case; ``structure``, the long cases and their sizes; ``knobs``, the mistakes tried, in
order, ``edits`` and ``fill``.
"""

from __future__ import annotations

import linecache
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from attnprep.grader.cases import CAUSAL_CUT, Case, alone, generator, rows, with_causal
from attnprep.grader.cases import changed as changed_
from attnprep.grader.edits import FillReference, knobs_of
from attnprep.grader.kinds.base import Built, Config, ContractError, Grading, Kind, first
from attnprep.grader.result import Check, Diagnosis, Name, msg

# aten ops that compute the whole attention: torch's SDPA kernels called through torch.ops, which
# the observer (a torch function mode) does not see
BUILTIN_OPS = ("scaled_dot_product", "_flash_attention", "_efficient_attention", "_cudnn_attention",
               "native_multi_head_attention", "flex_attention")
# the tensors allocated during a call may hold, at once, the bound of SPEC §7 or this many times the
# largest of them: a step's few tiles (scores, mask, exponentials, the product) and the output
# fit; one tile kept per key block (a list of the (L, S) scores in tiles or rows) does not
TILES_AT_ONCE = 12
KEPT = "flash_scores_kept"  # the mistake named when the tensors held at once are over that
STABILITY_DIM = 4  # an exact scale (1/2): integer scores stay exact however the attempt orders the ops
STABILITY_RANGE = 16  # q, k entries in [-16, 16]: scores up to ±512, block maxima far apart


# --- what the attempt allocates ----------------------------------------------------------------


class Allocations(TorchDispatchMode):
    """What the aten ops run while active allocate, as storages: the largest one, and the peak of
    the elements held at once by the storages allocated meanwhile and still alive (a list of
    tiles or rows kept until the end counts whole), each with the line of ``source`` (the
    attempt's file) that made it. A storage counts once, when first seen; views, in-place results
    and outputs written into an existing tensor never count. A storage is alive until its last
    tensor goes (a weak reference to it tells)."""

    def __init__(self, existing, source: str):
        super().__init__()
        self.keep = [t.untyped_storage() for t in existing]  # alive throughout: their ids stay theirs
        self.known = {id(s) for s in self.keep}
        self.alive: dict[int, tuple[int, Any]] = {}  # id(storage) -> (elements, weak reference)
        self.source = source
        self.elements = 0
        self.shape: tuple[int, ...] = ()
        self.dtype = ""
        self.line = 0
        self.code = ""
        self.live = 0  # elements held now by the storages allocated meanwhile
        self.peak = 0
        self.peak_count = 0  # how many storages held the peak
        self.peak_line = 0
        self.peak_code = ""
        self.builtins: set[str] = set()
        self._builtin: dict = {}  # op overload -> its name when it is a built-in attention, else ""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # the default wraps the hook in torch._dynamo: seconds to import
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        try:
            builtin = self._builtin.get(func)
            if builtin is None:  # worked out once per op: formatting its name costs more than many ops
                name = str(func)
                builtin = self._builtin[func] = name if any(op in name for op in BUILTIN_OPS) else ""
            if builtin:
                self.builtins.add(builtin)
            if isinstance(out, torch.Tensor):
                self._see(out)
            else:
                for t in tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        self._see(t)
        except Exception:  # measuring must never change what the attempt computes
            pass
        return out

    def _see(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()  # one Python object per storage while it lives
        key = id(storage)
        if key in self.known:
            return
        self.known.add(key)
        elements = storage.nbytes() // max(t.element_size(), 1)
        self.alive[key] = (elements, weakref.ref(storage, lambda _, key=key: self._freed(key)))
        self.live += elements
        where = None
        if elements > self.elements:
            where = self._where()
            self.elements, self.shape, self.dtype = elements, tuple(t.shape), str(t.dtype).replace("torch.", "")
            self.line, self.code = where
        if self.live > self.peak:
            self.peak, self.peak_count = self.live, len(self.alive)
            self.peak_line, self.peak_code = where or self._where()

    def _freed(self, key: int) -> None:
        entry = self.alive.pop(key, None)
        if entry is not None:
            self.live -= entry[0]
            self.known.discard(key)  # the id may come back for another storage

    def _where(self) -> tuple[int, str]:
        frame = sys._getframe(3)
        while frame is not None:
            if frame.f_code.co_filename == self.source:
                return frame.f_lineno, linecache.getline(self.source, frame.f_lineno).strip()
            frame = frame.f_back
        return 0, ""


# --- the kind -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BlockedGrading(Grading):
    shapes: tuple[list[int], ...]  # (L, S, block_size) of the cases (block_size 0: the default)
    stability: tuple[int, ...]  # (L, S, block_size) of the large-score case
    structure: dict[str, Any]  # the long cases and their sizes
    edits: dict[str, list[dict]] = field(default_factory=dict)  # knob -> its {old, new} edits of the solution
    fill: str = ""  # the reference's mask fill as written (a variant with another fill has it there)


def _sizes(L: int, S: int, block: int | None) -> Name:
    """The name of a case by its sizes: "L=7 S=7 block=3", "L=6 S=6 default block"."""
    if block:
        return Name(f"L={L} S={S} block={block}", "name.sizes_block", L=L, S=S, block=block)
    return Name(f"L={L} S={S} default block", "name.sizes_default_block", L=L, S=S)


@dataclass(frozen=True, eq=False, kw_only=True)
class BlockedConfig(Config):
    batch: int
    heads: int
    dim: int  # the head size D


class BlockedAttention(Kind):
    Grading = BlockedGrading
    Config = BlockedConfig
    traits = frozenset({"attention"})  # tiles, not rows: no softmax over a whole row of scores
    pair_knobs = True  # its variants take two knobs at once (both edits made)
    # no gradients probe: the exercise is FlashAttention's forward, whose real kernels write their
    # output tiles in place (a training backward is a kernel of its own)
    probes = frozenset({"causality", "batch", "device"})
    stages = ()  # tiles, not whole score matrices: no stage shapes

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.name = exercise.contract.objects[0]
        self.shapes = [tuple(s) for s in self.grading.shapes]
        self.stability = tuple(self.grading.stability)
        self.structure = dict(self.grading.structure)
        self._cases: dict[int, list[Case]] = {}
        self._block: int | None = None  # the reference's default block_size, once read
        self.edited = FillReference(exercise.solution_path, {k: list(v) for k, v in self.grading.edits.items()},
                                    self.grading.fill)

    # --- shared -------------------------------------------------------------------------------

    def long_cases(self) -> dict[str, dict[str, Any]]:
        """The structure cases by name: their sizes and the bound B·H·L·max(D, block_size)."""
        st = self.structure
        out = {}
        for L, S, causal in st["cases"]:
            name = Name(f"long L={L} S={S}", "name.long", L=L, S=S)
            name = with_causal(name) if causal else name
            bound = st["batch"] * st["heads"] * L * max(st["dim"], st["block_size"])
            out[name] = {"L": L, "S": S, "is_causal": bool(causal), "bound": bound, "block": st["block_size"],
                         "batch": st["batch"], "heads": st["heads"], "dim": st["dim"]}
        return out

    def cases(self, ci: int) -> list[Case]:
        if ci not in self._cases:  # drawn once per config: the long ones are not free
            self._cases[ci] = self._draw(ci)
        return [Case(**vars(c)) for c in self._cases[ci]]  # fresh objects: the child replaces inputs

    def _draw(self, ci: int) -> list[Case]:
        c = self.configs[ci]
        B, H, D = c["batch"], c["heads"], c["dim"]
        g = generator(self.seed, ci)

        def qkv(L, S, b=B, h=H, d=D):
            return {"q": torch.randn(b, h, L, d, generator=g), "k": torch.randn(b, h, S, d, generator=g),
                    "v": torch.randn(b, h, S, d, generator=g)}

        def case(name, t, causal, block, **kw) -> Case:
            b, _, L, _ = t["q"].shape
            everywhere = torch.ones(b, L, dtype=torch.bool)
            return Case(name=name, inputs={**t, "is_causal": causal, "block_size": block or None},
                        queries=everywhere, seq=(L, t["k"].shape[-2]), graded={"out": rows(everywhere, 2, 4)}, **kw)

        cases: list[Case] = []
        drawn = {}
        for L, S, block in self.shapes:
            drawn[(L, S, block)] = t = qkv(L, S)
            label = _sizes(L, S, block)
            cases.append(case(label, t, False, block))
            cases.append(case(with_causal(label), t, True, block, observe=not any(x.observe for x in cases)))
        L, S, block = self.stability
        big = {"q": torch.randint(-STABILITY_RANGE, STABILITY_RANGE + 1, (B, H, L, STABILITY_DIM), generator=g).float(),
               "k": torch.randint(-STABILITY_RANGE, STABILITY_RANGE + 1, (B, H, S, STABILITY_DIM), generator=g).float(),
               "v": torch.randn(B, H, S, STABILITY_DIM, generator=g)}
        # query 0 against keys whose first feature is 14..16: every score of its row is below -104,
        # where exp(score) underflows to 0 in float32 (a max started at 0 gives 0/0 there)
        big["k"][..., 0] = torch.randint(14, STABILITY_RANGE + 1, (B, H, S), generator=g).float()
        big["q"][:, :, 0] = torch.tensor([-float(STABILITY_RANGE), 0.0, 0.0, 0.0])
        large = Name(f"large scores {_sizes(L, S, block)}", "name.large_scores_of", case=_sizes(L, S, block))
        cases.append(case(large, big, False, block))
        cases.append(case(with_causal(large), big, True, block))
        # perturbations: keys and values after CAUSAL_CUT changed, earlier queries unchanged
        for L, S, block in self.shapes[:2]:
            t = drawn[(L, S, block)]
            fresh = qkv(L, S)
            later = torch.arange(S) >= CAUSAL_CUT  # (S,)
            changed = {n: torch.where(later[:, None], fresh[n], t[n]) if n != "q" else t[n] for n in t}
            earlier = torch.arange(L)[None, :] < CAUSAL_CUT  # (1, L)
            base = with_causal(_sizes(L, S, block))
            cases.append(case(changed_(base, "future"), changed, True, block, base=base, check="causality",
                              unchanged={"out": rows(earlier.expand(B, L), 2, 4)}))
        if B > 1:
            L, S, block = self.shapes[1]
            t = drawn[(L, S, block)]
            name = _sizes(L, S, block)
            cases.append(case(alone(None, 2), {n: x[1:2].clone() for n, x in t.items()}, False, block, base=name,
                              base_rows=(1, 2), check="batch", unchanged={"out": rows(torch.ones(1, L, dtype=torch.bool), 2, 4)}))
        if ci == 0:
            for name, spec in self.long_cases().items():
                t = qkv(spec["L"], spec["S"], spec["batch"], spec["heads"], spec["dim"])
                cases.append(case(name, t, spec["is_causal"], spec["block"]))
        return cases

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        B, H, L, D = case.inputs["q"].shape
        return {"out": (B, H, case.queries.shape[1], D)}

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by name for the divergence finder's shapes, ``(B, H, block, D)`` for a tile. A lone
        size of 1 stays a number (a ragged last block of one row, keepdim's 1, are no batch axis);
        several axes of 1 (B = H = 1 on the long cases) keep their names, which cannot tell them
        apart: the engine traces a case whose sizes tell its axes apart, where there is one."""
        B, H, L, D = case.inputs["q"].shape
        block = case.inputs["block_size"] or self._default_block()
        sizes = {"B": B, "H": H, "L": L, "S": case.inputs["k"].shape[-2], "D": D, "block": block}
        ones = sum(size == 1 for size in sizes.values())
        return {name: size for name, size in sizes.items() if size > 1 or ones > 1}

    @staticmethod
    def arguments(case: Case) -> list:
        """Copies of the inputs, positionally (a renamed argument still works), block_size only
        when the case sets it (else the function's default)."""
        i = case.inputs
        args = [i["q"].clone(), i["k"].clone(), i["v"].clone(), i["is_causal"]]
        if i["block_size"] is not None:
            args.append(i["block_size"])
        return args

    def call(self, fn, case: Case):
        return fn(*self.arguments(case))

    # --- child --------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel) -> Built:
        fn = namespace.get(self.name)
        if not callable(fn):
            raise ContractError("contract.missing_functions", names=self.name, count=1,
                                signature=self.exercise.contract.forward)
        return Built({"fn": fn, "file": str(namespace.get("__file__", "")), "config": ci, "largest": {}, "builtins": set()})

    def run(self, attempt, case: Case) -> dict[str, Any]:
        if case.name not in self.long_cases():
            return {"out": first(self.call(attempt["fn"], case))}
        args = self.arguments(case)  # copied before the watch: the copies are the inputs
        watch = Allocations(args[:3], attempt["file"])
        with watch:
            out = first(attempt["fn"](*args))
        attempt["largest"][case.name] = {"elements": watch.elements, "shape": list(watch.shape), "dtype": watch.dtype,
                                         "line": watch.line, "code": watch.code[:200], "peak": watch.peak,
                                         "count": watch.peak_count, "peak_line": watch.peak_line,
                                         "peak_code": watch.peak_code[:200]}
        attempt["builtins"].update(watch.builtins)
        return {"out": out}

    def child_extra(self, attempt) -> dict | None:
        """The largest allocation of each long case (config 0, where they run), and the aten ops of
        a built-in attention seen there (the judge treats those as built-ins)."""
        if attempt["config"] != 0:
            return None
        return {"largest": dict(attempt["largest"]), "builtins": sorted(attempt["builtins"])}

    # --- parent -------------------------------------------------------------------------------

    def solution(self):
        """The reference function."""
        return super().solution()[self.name]

    def reference(self, ci: int, zero_bias=frozenset()):
        fn = self.solution()
        return lambda case: {"out": first(self.call(fn, case))}

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the edits of ``knob`` (a knob, or a tuple of knobs made together), its
        mask filled with ``fill``, called as the attempt is (block_size only when the case sets it)."""
        knobs = knobs_of(knob)
        name = self.name

        def call(case: Case):
            i = case.inputs
            fn = self.edited.namespace(knobs, fill)[name]  # compiled when first called: clashing edits raise here
            args = (i["q"], i["k"], i["v"], i["is_causal"]) + ((i["block_size"],) if i["block_size"] else ())
            return {"out": fn(*args)}  # the inputs as they are: no edit writes into them

        return call

    def _default_block(self) -> int:
        """The reference's default block_size (read once: every variant call of a search asks)."""
        if self._block is None:
            import inspect

            self._block = inspect.signature(self.solution()).parameters["block_size"].default
        return self._block

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        L, S = case.seq
        allowed = torch.ones(L, S, dtype=torch.bool)
        return torch.tril(allowed) if case.inputs["is_causal"] else allowed

    def _measured(self, extra: dict) -> list[tuple[str, dict, dict]]:
        """(case, measured, spec) of each long case, worst first (the most held at once against
        what is allowed)."""
        largest = extra.get("largest") if isinstance(extra, dict) else None
        if not isinstance(largest, dict):
            return []
        out = []
        for name, spec in self.long_cases().items():
            got = largest.get(name)
            if isinstance(got, dict) and isinstance(got.get("elements"), int):
                got = {**got, "peak": got["peak"] if isinstance(got.get("peak"), int) else got["elements"]}
                out.append((name, got, spec))
        return sorted(out, key=lambda x: -max(x[1]["elements"] / x[2]["bound"], x[1]["peak"] / self._held(*x[1:])))

    @staticmethod
    def _held(got: dict, spec: dict) -> int:
        """The elements the call's tensors may hold at once: the bound, or TILES_AT_ONCE times the
        largest of them."""
        return max(spec["bound"], TILES_AT_ONCE * got["elements"])

    @staticmethod
    def _kept(got: dict, spec: dict) -> bool:
        """No tensor over the bound, but more held at once than a step's tiles."""
        return got["elements"] <= spec["bound"] and got["peak"] > max(spec["bound"], TILES_AT_ONCE * got["elements"])

    def _what(self, got: dict, spec: dict):
        """What the largest tensor is, from its shape: an L×S score matrix or mask, (block, S) rows …"""
        shape = tuple(got.get("shape") or ())
        L, S = spec["L"], spec["S"]
        mask = got.get("dtype") == "bool"
        if len(shape) >= 2 and shape[-1] == S and shape[-2] == L:
            return msg("blocked_attention.what_mask" if mask else "blocked_attention.what_scores", L=L, S=S)
        if len(shape) >= 2 and shape[-1] == S and shape[-2] < L:
            return msg("blocked_attention.what_rows", rows=shape[-2], S=S)
        return msg("blocked_attention.what_tensor", shape=str(shape), dtype=got.get("dtype", ""))

    def _kept_params(self, name: str, got: dict, spec: dict) -> dict:
        return dict(case=name, peak=got["peak"], count=got.get("count", 0), allowed=spec["bound"],
                    held=self._held(got, spec), times=TILES_AT_ONCE, largest=got["elements"],
                    line=got.get("peak_line", 0), code=got.get("peak_code", ""), B=spec["batch"], H=spec["heads"],
                    L=spec["L"], D=spec["dim"], block=spec["block"])

    def extra_checks(self, extra: dict) -> list[Check]:
        measured = self._measured(extra)
        if not measured:
            return []
        name, got, spec = measured[0]
        params = dict(case=name, elements=got["elements"], allowed=spec["bound"], what=self._what(got, spec),
                      line=got.get("line", 0), code=got.get("code", ""), B=spec["batch"], H=spec["heads"],
                      L=spec["L"], D=spec["dim"], block=spec["block"])
        if min(g["elements"] for _, g, _ in measured) == 0:  # every call allocates its output at least
            return [Check("structure_memory", False, msg("blocked_attention.structure_unseen", **params))]
        if self._kept(got, spec):
            params = self._kept_params(name, got, spec)
            key = "blocked_attention.structure_kept" if params["line"] else "blocked_attention.structure_kept_no_line"
            return [Check("structure_memory", False, msg(key, **params))]
        if got["elements"] <= spec["bound"]:
            return [Check("structure_memory", True, msg("blocked_attention.structure_ok", **params))]
        key = "blocked_attention.structure_bad" if params["line"] else "blocked_attention.structure_bad_no_line"
        return [Check("structure_memory", False, msg(key, **params))]

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        found: dict[str, Diagnosis] = {}
        for name, got, spec in self._measured(extra):
            if self._kept(got, spec):
                if KEPT not in found:
                    found[KEPT] = Diagnosis(KEPT, (msg("blocked_attention.evidence_kept",
                                                       **self._kept_params(name, got, spec)),))
                continue
            if got["elements"] <= spec["bound"]:
                continue
            shape = tuple(got.get("shape") or ())
            if len(shape) < 2 or shape[-1] != spec["S"]:
                continue
            mistake = "flash_full_scores" if shape[-2] == spec["L"] else "flash_row_blocks"
            if mistake not in found:
                evidence = msg("blocked_attention.evidence", case=name, elements=got["elements"], allowed=spec["bound"],
                               what=self._what(got, spec), line=got.get("line", 0))
                found[mistake] = Diagnosis(mistake, (evidence,))
        return list(found.values())


KIND = BlockedAttention
