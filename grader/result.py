"""Results are values: frozen dataclasses the Rich report and the JSON only read.

They carry ids and numbers, never sentences: a check is ``Check("output", False, "output.differ",
{"bad": 3, "total": 36, "case": "padded"})``; the words for ``output.differ`` live in the text
files of :mod:`attnprep.texts`, one per language, and are rendered at the edge (the report and
``check --json``). A :class:`Message` is that pair of a text key and its parameters.

This module is torch-free so that the history and the renderer can use it without torch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

JSON_VERSION = 2
ROW_SUM_TOL = 1e-4  # |softmax row sum - 1| allowed, by the judge and the report alike


class Verdict(str, enum.Enum):
    """A stable token (``check --json``, the history); its words are the text ``verdict.<token>``."""

    PASSED = "passed"
    WRONG_OUTPUT = "wrong_output"
    WRONG_SHAPE = "wrong_shape"
    MASK_LEAK = "mask_leak"
    ERROR = "error"
    TIMEOUT = "timeout"
    BUILTIN = "used_builtin"
    CONTRACT = "contract"
    SYNTAX = "syntax_error"
    STRUCTURE = "structure"
    GRADIENTS = "gradients"  # every output right; a parameter's (or input's) gradient missing or wrong


# The history of versions before 2 stored the English label; these are the tokens they stand for.
LEGACY_LABELS = {
    "passed": "passed", "wrong output": "wrong_output", "wrong shape": "wrong_shape",
    "mask leak": "mask_leak", "error": "error", "timeout": "timeout",
    "used a built-in": "used_builtin", "contract": "contract", "syntax error": "syntax_error",
}


@dataclass(frozen=True)
class Message:
    """A text key of :mod:`attnprep.texts` and the values it is formatted with."""

    key: str
    params: dict[str, Any] = field(default_factory=dict)


def msg(key: str, **params: Any) -> Message:
    return Message(key, params)


class Words(str):
    """A string the grader returns where plain text is expected (a detail of how the child's reply
    failed), that the report says by its text key: the string is its English, for logs and tests;
    ``key`` and ``params`` say it in the language, as a :class:`Message` does."""

    said: dict[str, str] | None = None  # its words by language, when they are data (see Name.own)

    def __new__(cls, text: str, key: str, /, **params: Any):
        words = super().__new__(cls, text)
        words.key, words.params = key, params
        return words

    def __reduce__(self):  # pickled with its words (a drill's check comes back from a forked child)
        return _said, (type(self), str(self), self.key, self.params, self.said)


def _said(cls: type, text: str, key: str, params: dict, said: dict | None = None):
    words = cls(text, key, **params)
    words.said = said
    return words


class Name(Words):
    """A name of the grader's: a case, a call of a script of calls, a graded output. The string is
    its stable id (the key of the child's reply and of every table of outputs, the same in every
    language); ``key`` and ``params`` say it in words (the texts' ``[name]`` table:
    ``Name("padded+causal", "name.causal", case=Name("padded", "name.padded"))``). A parameter may
    be a Name itself: a perturbation of a case names the case it perturbs."""

    @classmethod
    def own(cls, text: str, said: dict[str, str]) -> "Name":
        """A name an exercise's data gives (its ``[grading] cases``), said in each other language
        from the exercise's own texts (``said``: language -> words; the key ``name.own`` says it as
        written)."""
        name = cls(text, "name.own", text=text)
        name.said = dict(said)
        return name


# The built-in an attempt "used" when it reaches attnprep's own solutions (the child writes it as text)
REFERENCE_SOLUTION = Name("attnprep's reference solution", "name.reference_solution")


class Names(str):
    """Names said as one list in the language (each said, joined by the language's comma);
    ``quoted``: each in quotes (a case's name may hold a comma); ``more``: "…" after the last. The
    string is the list of their ids: "'padded', 'plain+causal'"."""

    def __new__(cls, names, quoted: bool = False, more: bool = False) -> "Names":
        names = tuple(names)
        said = super().__new__(cls, ", ".join(f"'{n}'" if quoted else n for n in names) + (", …" if more else ""))
        said.names, said.quoted, said.more = names, quoted, more
        return said

    def __reduce__(self):
        return Names, (self.names, self.quoted, self.more)


@dataclass(frozen=True)
class Check:
    """One row of the report: ``output``, ``causality``, ``padding`` … (``id`` is a stable token)."""

    id: str
    passed: bool | None  # None: not applicable / could not run (the message says why)
    message: Message | None = None


@dataclass(frozen=True)
class Diagnosis:
    """A named mistake (``id`` from the mistake catalogue) and what the grader saw."""

    id: str
    evidence: tuple[Message, ...] = ()


@dataclass(frozen=True)
class ShapeRow:
    stage: str  # "q", "scores", "attn", "output" …
    expected: tuple[int, ...]
    got: tuple[int, ...] | None  # None: not observed
    equivalent: bool = False  # another layout of the same numbers, e.g. (B*H, T, T) for (B, H, T, T)

    @property
    def ok(self) -> bool:
        return self.got is None or self.got == self.expected or self.equivalent


@dataclass(frozen=True)
class Heatmap:
    """Attention probabilities of one (sample, head), rows = queries, columns = keys."""

    sample: int  # 0-based, as every index the report shows
    head: int
    case: str
    expected: list[list[float]]
    got: list[list[float]] | None
    allowed: list[list[bool]]  # False where the reference masks the cell
    graded: list[bool] | None = None  # per query row: False at a padded query (not graded); None: all


@dataclass(frozen=True)
class OutputDiff:
    """``torch.testing.assert_close``'s summary of the first mismatching case."""

    case: str
    config: dict[str, Any]
    output: str  # the named output that differs ("out", "cache k" …)
    mismatched: int
    total: int
    max_abs: float | None = None
    max_abs_at: tuple[int, ...] = ()
    max_rel: float | None = None
    max_rel_at: tuple[int, ...] = ()
    nonfinite: float | None = None
    nonfinite_at: tuple[int, ...] = ()
    atol: float = 0.0
    rtol: float = 0.0


@dataclass(frozen=True)
class ErrorInfo:
    kind: str  # "exception", "syntax", "exit", "crash", "memory", "timeout", "blank", "reply", "internal"
    message: Message  # one line
    traceback: str = ""  # the user's own frames only


@dataclass(frozen=True)
class Divergence:
    """Where the attempt first goes wrong: a line of the user's file and the tensor it made."""

    line: int
    code: str
    name: str  # the variable the line assigns ("q"), "" when none
    shape: tuple[int, ...]
    named: str  # the shape in axis names, "(B, T, H, D)"
    reason: str  # "layout" (the right numbers, a wrong layout), "incomplete", "values", "short", "raised", or a
    # cause grader/explain.py found on another line ("guarded", "twice", "start", …): a key of [divergence]
    ref_name: str = ""  # the reference's counterpart
    ref_named: str = ""
    ref_code: str = ""  # the reference's line, where it helps ("incomplete")
    part: str = ""  # the call of a script of calls it is in ("step 3 (pos 6..8)"), "" for one call
    case: str = ""  # the case it was traced on and its config ("'plain'", "d_model=48, num_heads=12"): a
    config: str = ""  # factor or a shape it names holds for those sizes


@dataclass(frozen=True)
class MappingNote:
    """How the grader matched one of the attempt's layers to a contract role."""

    kind: str  # "by_shape", "alias", "zero_bias", "transposed", "stray"
    role: str
    layer: str


@dataclass(frozen=True)
class Result:
    exercise: str
    file: str
    verdict: Verdict
    checks: tuple[Check, ...] = ()
    diagnoses: tuple[Diagnosis, ...] = ()
    mapping: dict[str, str] = field(default_factory=dict)
    mapping_notes: tuple[MappingNote, ...] = ()
    shapes: tuple[ShapeRow, ...] = ()
    heatmap: Heatmap | None = None
    row_sums: tuple[float, float] | None = None  # (min, max) of observed softmax row sums
    output_diff: OutputDiff | None = None
    error: ErrorInfo | None = None
    divergence: Divergence | None = None  # failing attempts only
    notes: tuple[Message, ...] = ()  # things worth saying that are no failure (a header that disagrees)
    stdout: str = ""  # what the attempt printed (bounded)
    internal: bool = False  # True: attnprep itself failed, not the attempt
    duration_s: float = 0.0
    stdout: str = ""  # what the attempt printed (stdout and stderr), bounded; not in the JSON yet

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    @property
    def blank(self) -> bool:
        """The file is the untouched stub: nothing written yet."""
        return self.error is not None and self.error.kind == "blank"
