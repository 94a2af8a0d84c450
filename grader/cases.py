"""The graded inputs: the same seeded tensors for the attempt and the reference.

A :class:`Case` is one call (or one script of calls) with its inputs, which outputs are graded
where, and, for a perturbation of another case, where its outputs must stay equal to that case's.
Kinds build their cases; :func:`sequence_cases` is the set every token-sequence kind shares:
right padding and left padding (the two ways real batches are padded), at least one real token per
sample, graded only at real query positions, and the perturbations of the generic probes (future
tokens, padded tokens, a sample taken out of its batch, a second run in eval()).

A case's ``name`` is a :class:`~attnprep.grader.result.Name`: a string, the case's stable id (the
key of the child's reply, of ``base``), and the text key with its values the report says it by, in
the language (the texts' ``[name]`` table); :func:`plus_causal`, :func:`changed`, :func:`alone` …
build the names the kinds share.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from attnprep.grader.result import Name

MAIN_T = 7  # the sequence length of the observed case; no head size in the configs may equal it
CAUSAL_CUT = 3  # tokens from here on are perturbed by the causality check


# The names of the token-sequence cases, shared by the kinds that build their own
PLAIN = Name("plain", "name.plain")
PADDED = Name("padded", "name.padded")
LEFT_PADDED = Name("left-padded", "name.left_padded")
T1 = Name("T=1", "name.t1")


def plus_causal(case: Name) -> Name:
    """``case`` with the causal flag on: "padded+causal"."""
    return Name(f"{case}+causal", "name.causal", case=case)


def changed(case: Name, what: str) -> Name:
    """A perturbation of ``case`` for a probe: "padded, padding changed" (``what``: a key of the
    texts' ``[name.changed]``: future, padding, masked_keys, later_keys, tokens …)."""
    return Name(f"{case}, {what.replace('_', ' ')} changed", f"name.changed.{what}", case=case)


def alone(case: Name | None, n: int, what: str = "sample") -> Name:
    """Sample (or row) ``n`` of ``case`` run on its own: "sample 2 alone", "no mask, row 2 alone"."""
    if case is None:
        return Name(f"{what} {n} alone", f"name.{what}_alone", n=n)
    return Name(f"{case}, {what} {n} alone", f"name.{what}_alone_of", case=case, n=n)


def with_causal(case: Name) -> Name:
    """``case`` with the causal flag on, for names of sizes: "L=7 S=7 block=3 causal"."""
    return Name(f"{case} causal", "name.with_causal", case=case)


def x_of(shape: str, what: str = "") -> Name:
    """A case named by its input's shape: "x (5, d)"; ``what`` (a key of the texts' ``[name.x]``)
    says what is special about it: "x (3, 5, d) * 4: large activations"."""
    if not what:
        return Name(f"x {shape}", "name.x.plain", shape=shape)
    english = {"large_activations": "x {shape}: large activations", "large_mean": "x {shape}: a large mean",
               "tiny": "tiny x {shape}: eps matters"}[what]
    return Name(english.format(shape=shape), f"name.x.{what}", shape=shape)


def low_precision(dtype: str, shape: str) -> Name:
    """The case of a module and its input in a low precision: "bfloat16 module and x (2, 7, d)"."""
    return Name(f"{dtype} module and x {shape}", "name.x.low_precision", dtype=dtype, shape=shape)


def again(case: Name) -> Name:
    """``case`` run a second time: "x (2, 7, d) again"."""
    return Name(f"{case} again", "name.again", case=case)


def again_in_eval(case: Name) -> Name:
    """``case`` once more with another dropout seed (the eval probe)."""
    return Name(f"{case} again (new dropout seed)", "name.again_new_seed", case=case)


@dataclass
class Case:
    name: Name  # a str: the case's id; said in a language from its text key
    inputs: dict[str, Any]  # what the kind passes to the attempt: tensors, flags ("is_causal")
    queries: torch.Tensor  # (B, T_q) bool: real query positions (graded rows; heat-map, row sums)
    seq: tuple[int, int]  # (T_q, T_k): the size of the score matrices, for the observer
    graded: dict[str, torch.Tensor] = field(default_factory=dict)  # output -> bool mask broadcastable to it
    base: str | None = None  # a perturbation of this case …
    unchanged: dict[str, torch.Tensor] | None = None  # … whose outputs must stay equal here
    base_rows: tuple[int, int] | None = None  # compare with these samples of the base case
    check: str = ""  # which probe the perturbation belongs to: causality, padding, batch, eval
    observe: bool = False  # record softmax / matmuls on this case (heat-map, shapes, row sums)
    picture: bool = False  # record the attention probabilities: a candidate for the heat-map
    grads: bool = False  # the case run once more with gradients on (no fully masked row: no NaN)
    dtype: str = "float32"  # the dtype every output must have (the input's: bfloat16 for a bfloat16 case)
    tolerance: tuple[float, float] | None = None  # (rtol, atol) for this case; None: the grader's float32 one

    def mask(self, output: str, shape: tuple[int, ...]) -> torch.Tensor:
        """Where ``output`` is graded, expanded to its shape (everywhere when not said)."""
        where = self.graded.get(output)
        if where is None:
            return torch.ones(shape, dtype=torch.bool)
        return where.expand(shape)

    def unchanged_mask(self, output: str, shape: tuple[int, ...]) -> torch.Tensor:
        where = (self.unchanged or {}).get(output)
        if where is None:
            return torch.ones(shape, dtype=torch.bool)
        return where.expand(shape)


def generator(seed: int, config_index: int, salt: str = "cases") -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(f"{salt}:{seed}:{config_index}".encode()))


def rows(positions: torch.Tensor, token_axis: int, ndim: int) -> torch.Tensor:
    """A (B, T) bool of positions as a mask broadcastable to an output of ``ndim`` dims whose batch
    axis is 0 and token axis ``token_axis``."""
    view = [1] * ndim
    view[0], view[token_axis] = positions.shape
    return positions.reshape(view)


def lengths_mask(lengths: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T) right padding


def left_mask(starts: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] >= torch.tensor(starts)[:, None]  # (B, T) padding first


@dataclass
class SequenceCase:
    """What :func:`sequence_cases` describes before a kind turns it into a :class:`Case`."""

    name: Name
    tensors: dict[str, torch.Tensor]  # each (B, T, *per-token shape)
    mask: torch.Tensor | None  # (B, T) bool key padding mask, True = real
    is_causal: bool
    queries: torch.Tensor  # (B, T) bool
    base: str | None = None
    unchanged: torch.Tensor | None = None  # (B, T) bool
    base_rows: tuple[int, int] | None = None
    check: str = ""
    observe: bool = False
    picture: bool = False
    grads: bool = False


def sequence_cases(shapes: dict[str, tuple[int, ...]], seed: int, config_index: int,
                   dtype=torch.float32) -> list[SequenceCase]:
    """The token-sequence cases for inputs of the given per-token shapes, e.g. {"x": (16,)}."""
    g = generator(seed, config_index)

    def draw(B: int, T: int) -> dict[str, torch.Tensor]:
        return {k: torch.randn((B, T, *s), generator=g).to(dtype) for k, s in shapes.items()}

    def replace(base: dict[str, torch.Tensor], where: torch.Tensor) -> dict[str, torch.Tensor]:
        fresh = draw(*where.shape)
        out = {}
        for k, t in base.items():
            w = where.reshape(*where.shape, *([1] * (t.dim() - 2)))
            out[k] = torch.where(w, fresh[k], t)
        return out

    T = MAIN_T
    every = lambda B, T: torch.ones(B, T, dtype=torch.bool)  # noqa: E731
    main = draw(2, T)
    padded = draw(3, T)
    pad_mask = lengths_mask([T, 4, 1], T)
    future = torch.zeros(2, T, dtype=torch.bool)
    future[:, CAUSAL_CUT:] = True
    short = draw(1, 5)
    left = left_mask([0, 3, 6], T)
    lpadded = draw(3, T)
    S = SequenceCase
    return [
        S(PLAIN, main, None, False, every(2, T)),
        S(plus_causal(PLAIN), main, None, True, every(2, T), grads=True),
        # The heat-map shows whichever of these shows the attempt's error best: with right padding a
        # causal query never sees a padded key, so padding bugs show only without causal or with
        # left padding.
        S(PADDED, padded, pad_mask, False, pad_mask, picture=True),
        S(plus_causal(PADDED), padded, pad_mask, True, pad_mask, observe=True, picture=True),
        S(LEFT_PADDED, lpadded, left, False, left),
        S(plus_causal(LEFT_PADDED), lpadded, left, True, left),
        S(T1, draw(1, 1), None, False, every(1, 1)),
        S(Name("T=1 causal+mask", "name.t1_causal_mask"), draw(1, 1), torch.ones(1, 1, dtype=torch.bool), True, every(1, 1)),
        S(Name("B=1 T=5 causal", "name.short_causal", B=1, T=5), short, None, True, every(1, 5)),
        # perturbations
        S(changed(plus_causal(PLAIN), "future"), replace(main, future), None, True, every(2, T),
          base=plus_causal(PLAIN), unchanged=~future, check="causality"),
        S(changed(PADDED, "padding"), replace(padded, ~pad_mask), pad_mask, False, pad_mask,
          base=PADDED, unchanged=pad_mask, check="padding"),
        S(changed(plus_causal(PADDED), "padding"), replace(padded, ~pad_mask), pad_mask, True, pad_mask,
          base=plus_causal(PADDED), unchanged=pad_mask, check="padding"),
        S(changed(LEFT_PADDED, "padding"), replace(lpadded, ~left), left, False, left,
          base=LEFT_PADDED, unchanged=left, check="padding"),
        S(changed(plus_causal(LEFT_PADDED), "padding"), replace(lpadded, ~left), left, True, left,
          base=plus_causal(LEFT_PADDED), unchanged=left, check="padding"),
        S(alone(None, 2), {k: v[1:2].clone() for k, v in padded.items()}, pad_mask[1:2].clone(), True,
          pad_mask[1:2].clone(), base=plus_causal(PADDED), unchanged=pad_mask[1:2].clone(), base_rows=(1, 2),
          check="batch"),
        S(again_in_eval(PLAIN), main, None, False, every(2, T),
          base=PLAIN, unchanged=every(2, T), check="eval"),
    ]


def to_case(s: SequenceCase, inputs: dict[str, Any], output_masks: Callable[[torch.Tensor], dict[str, torch.Tensor]]) -> Case:
    """A :class:`Case` of a kind from a :class:`SequenceCase`: ``output_masks`` turns (B, T) query
    positions into the kind's per-output masks."""
    T = s.queries.shape[1]
    return Case(
        name=s.name, inputs=inputs, queries=s.queries, seq=(T, T), graded=output_masks(s.queries),
        base=s.base, unchanged=None if s.unchanged is None else output_masks(s.unchanged),
        base_rows=s.base_rows, check=s.check, observe=s.observe, picture=s.picture, grads=s.grads,
    )


def grads_case(cases: list[Case]) -> Case:
    """The case a kind runs with gradients on: the one marked ``grads``, else the observed one."""
    return next((c for c in cases if c.grads), None) or next(c for c in cases if c.observe)
