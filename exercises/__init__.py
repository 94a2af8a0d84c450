"""The exercise registry: one folder per exercise, its data in ``exercise.toml``.

Everything about an exercise (title, contract, hints, notes, named mistakes, graded sizes) is
read from ``exercises/<id>/exercise.toml``; the stub template is ``exercises/<id>/stub.py.j2``, or the one
its kind shares, ``exercises/stubs/<kind>.py.j2``,
and the reference solution is ``attnprep.solutions.<id>``. Paths are derived from the id and
never listed twice. This module must stay torch-free: `list`, `new`, `hint` and `solution` use it.

The records are immutable ``NamedTuple``s rather than frozen dataclasses: every command imports
this module, and on Python 3.11 a dataclass costs ~0.6 ms to define against ~0.08 ms.
"""

from __future__ import annotations

import functools
import itertools
import operator
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
SOLUTIONS_DIR = HERE.parent / "solutions"  # repo: solutions/; installed: attnprep/solutions/


class UnknownExercise(KeyError):
    """An id that is not in the registry; carries the closest known ids."""

    def __init__(self, exercise_id: str, suggestions: list[str]):
        super().__init__(exercise_id)
        self.exercise_id = exercise_id
        self.suggestions = suggestions

    def __str__(self) -> str:
        from attnprep import texts

        said = texts.t("compare_error.or").join(repr(s) for s in self.suggestions)
        hint = texts.t("registry.did_you_mean", close=said) if self.suggestions else ""
        return texts.t("registry.unknown", id=self.exercise_id, hint=hint)


class Param(NamedTuple):
    """One parameterised layer of the contract, e.g. ``q_proj: Linear(d_model, d_model)``."""

    name: str
    type: str  # "linear" or "rmsnorm"
    in_features: str  # expression of the constructor arguments ("" for rmsnorm)
    out_features: str  # expression; for rmsnorm: the normalised size
    bias: bool
    aliases: tuple[str, ...] = ()  # other names a layer of this role goes by (Hugging Face's gate_proj for w1)
    repeat: str = ""  # a repeated role: how many (an expression, "num_experts"); its name holds the index as * (experts.*.w1)

    def shapes(self, args: dict[str, int]) -> dict[str, tuple[int, ...]]:
        """Parameter tensors of this layer, ``{"weight": (out, in), "bias": (out,)}``."""
        out = evaluate(self.out_features, args)
        if self.type == "rmsnorm":
            return {"weight": (out,)}
        shapes = {"weight": (out, evaluate(self.in_features, args))}
        if self.bias:
            shapes["bias"] = (out,)
        return shapes

    def describe(self) -> str:
        if self.type == "rmsnorm":
            return f"RMSNorm({self.out_features})"
        bias = "" if self.bias else ", bias=False"
        return f"Linear({self.in_features}, {self.out_features}{bias})"


class Contract(NamedTuple):
    kind: str  # grader driver: "attention_module" or "causal_functions"
    objects: tuple[str, ...]  # class or function names the user writes
    constructor: str  # argument list as written in Python, "" for functions
    forward: str  # forward / call signature as written in Python
    returns: str
    params: tuple[Param, ...]
    details: str  # extra contract prose shown in the stub docstring


class Mistake(NamedTuple):
    id: str
    title: str
    why: str
    fix: str
    category: str = ""  # the verdict it headlines when named: "wrong_output", "mask_leak" … ("": the checks decide)
    named_by: str = "variant"  # "variant": a knob of the kind reproduces it; "evidence": named from what is observed;
    # "pair": the two knobs of ``pair`` together reproduce it
    pair: tuple[str, ...] = ()
    # a field of the child's observation (grader/wire.py Observed) that must be set for the name to
    # be given, e.g. "discarded_fills": the outputs alone show what happened, not how
    observed: str = ""
    # the fix in the words of particular exercises (a shared mistake's code written with the names
    # that exercise has: mla's nope + rope, a function's q.size(-1)): ((ids, fix), …); see for_exercise
    fix_for: tuple = ()
    # what the judge reads besides the words (exercises/mistakes.toml's header says each)
    mask: bool = False
    early_in_pairs: bool = False
    evidence: tuple[str, ...] = ()
    superseded_by: str = ""
    shown_by: str = ""  # the generic probe that names it (grader/judge.py SHOWN_BY), for named_by = "evidence"
    any_exercise: bool = False  # named by its probe in every exercise, listed or not

    def for_exercise(self, exercise_id: str) -> "Mistake":
        """The mistake as an exercise's report shows it: its own variant of the fix, where it has one."""
        for ids, fix in self.fix_for:
            if exercise_id in ids:
                return self._replace(fix=fix)
        return self


class QA(NamedTuple):
    q: str
    a: str


class Exercise(NamedTuple):
    id: str
    title: str
    difficulty: str  # "easy", "medium", "hard"
    minutes: int  # drill time budget
    order: int
    summary: str
    contract: Contract
    hints: tuple[str, ...]
    key_points: tuple[str, ...]
    qa: tuple[QA, ...]
    mistakes: tuple[Mistake, ...]
    grading: dict  # graded constructor configurations etc., read by the grader driver
    # the interview's follow-up (toml ``next``): ids of the exercises an interviewer chains after
    # this one, in order; the first one the bank has is asked (ids not in the registry are skipped)
    follow_ups: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return HERE / self.id

    @property
    def stub_template(self) -> Path:
        """The folder's own ``stub.py.j2``, else the one its kind shares: ``stubs/<kind>.py.j2``."""
        own = self.folder / "stub.py.j2"
        return own if own.is_file() else HERE / "stubs" / f"{self.contract.kind}.py.j2"

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS_DIR / f"{self.id}.py"

    @property
    def solution_module(self) -> str:
        return f"attnprep.solutions.{self.id}"

    @property
    def filename(self) -> str:
        """The file name of an attempt in a workspace."""
        return f"{self.id}.py"

    def mistake(self, mistake_id: str) -> Mistake:
        for m in self.mistakes:
            if m.id == mistake_id:
                return m
        return mistake_catalogue()[mistake_id].for_exercise(self.id)


# --- safe arithmetic on constructor arguments -----------------------------------------------

def evaluate(expression: str, args: dict[str, int]) -> int:
    """Evaluate ``"num_kv_heads * (d_model // num_heads)"`` with integer arguments (no eval)."""
    import ast  # only the grader and the tests need this: keep `list` light

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return int(args[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"unsupported expression {expression!r}")

    return walk(_parsed(expression))


@functools.cache
def _parsed(expression: str):
    """The parsed expression: the grader evaluates the same few shapes tens of thousands of times."""
    import ast

    return ast.parse(expression, mode="eval")


# --- loading -----------------------------------------------------------------------------------


def _language() -> str:
    from attnprep import texts  # torch-free, reads the environment at call time

    return texts.language()


def _translation(path: Path) -> dict:
    """The texts of ``path`` in another language (``zh.toml``, ``mistakes.zh.toml``), {} if none."""
    import tomllib

    return _read_toml(path) if path.is_file() else {}


def _shown(path: Path) -> str:
    """``path`` as a contributor finds it: ``exercises/swiglu/zh.toml``."""
    try:
        return f"exercises/{path.relative_to(HERE).as_posix()}"
    except ValueError:
        return str(path)


def _read_toml(path: Path) -> dict:
    """A data file of the bank, parsed; invalid TOML is an :class:`ExerciseDataError` naming it."""
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ExerciseDataError(_shown(path), "toml", error=str(exc)) from None


def own_names(exercise_id: str) -> dict[str, dict[str, str]]:
    """The exercise's own words for the names of the cases its ``[grading]`` gives as data: the
    ``[names]`` table of each other language's ``<lang>.toml`` (the name as ``exercise.toml``
    writes it = said in that language), by language."""
    from attnprep import texts

    return {lang: _translation(HERE / exercise_id / f"{lang}.toml").get("names", {})
            for lang in texts.LANGUAGES if lang != "en"}


TRANSLATED_MISTAKE = ("title", "why", "fix", "fix_for")


def mistake_catalogue(lang: str | None = None) -> dict[str, Mistake]:
    """Every named mistake: the shared ``mistakes.toml`` and each exercise folder's own
    ``mistakes.toml`` (mistakes that only one exercise can make), with title, why and fix in the
    current language (``mistakes.<lang>.toml`` beside each file, English where a text is missing)."""
    return _mistake_catalogue(lang or _language())


@functools.cache
def _mistake_catalogue(lang: str) -> dict[str, Mistake]:
    files = [HERE / "mistakes.toml", *sorted(HERE.glob("*/mistakes.toml"))]
    out: dict[str, Mistake] = {}
    for path in files:
        words: dict[str, dict] = {}
        if lang != "en":
            for m in _translation(path.with_name(f"mistakes.{lang}.toml")).get("mistake", []):
                words[m.get("id", "")] = {k: m[k] for k in TRANSLATED_MISTAKE if m.get(k)}
        for i, m in enumerate(_read_toml(path).get("mistake", [])):
            where = f"[[mistake]] {i}" + (f" ({m['id']})" if "id" in m else "")
            _check_table(_shown(path), where, m, _MISTAKE_KEYS, _OPTIONAL_MISTAKE_KEYS)
            fields = {**m, **words.get(m["id"], {})}
            # "mla mla_decode" = "…": the exercises (space-separated ids) a variant of the fix is for
            fix_for = tuple((tuple(ids.split()), fix) for ids, fix in fields.get("fix_for", {}).items())
            out[m["id"]] = Mistake(**{**fields, "pair": tuple(m.get("pair", ())), "fix_for": fix_for,
                                      "evidence": tuple(m.get("evidence", ()))})
    return out


def _translate(data: dict, words: dict) -> dict:
    """``data`` (an exercise.toml) with its texts replaced by those of ``words`` (a zh.toml):
    title, summary, hints, contract details and returns, notes' key_points and qa; lists only when
    complete."""
    if not words:
        return data
    data = {**data}
    for key in ("title", "summary"):
        if words.get(key):
            data[key] = words[key]
    if len(words.get("hints", [])) == len(data.get("hints", [])):
        data["hints"] = words["hints"]
    for key in ("details", "returns"):  # returns: when it is said in words ("x's shape and dtype")
        if words.get("contract", {}).get(key):
            data["contract"] = {**data["contract"], key: words["contract"][key]}
    notes, zh_notes = dict(data.get("notes", {})), words.get("notes", {})
    if len(zh_notes.get("key_points", [])) == len(notes.get("key_points", [])):
        notes["key_points"] = zh_notes.get("key_points", [])
    if len(zh_notes.get("qa", [])) == len(notes.get("qa", [])):
        notes["qa"] = [{**en, **{k: v for k, v in zh.items() if v}} for en, zh in zip(notes.get("qa", []), zh_notes.get("qa", []))]
    data["notes"] = notes
    fixes = data.get("fixes", {})  # each fix on its own: a fix may be pure code, the same in every language
    data["fixes"] = {**fixes, **{m: fix for m, fix in words.get("fixes", {}).items() if m in fixes and fix}}
    return data


class ExerciseDataError(ValueError):
    """A data file of an exercise folder (``exercise.toml``, its ``mistakes.toml``, a ``<lang>.toml``)
    does not read as the bank needs it: the file, the field (``[contract] params[1] (w2)``) and what is
    wrong, in one line, instead of a ``KeyError`` from deep inside whichever command first reads the
    registry. ``problem`` picks the words (the texts ``devcheck.data_<problem>``, in each language),
    rendered when the error is shown: ``attnprep dev check`` as a finding, the CLI in its one-line
    internal-error message."""

    def __init__(self, path: str, problem: str, **params):
        super().__init__(path, problem)
        self.path, self.problem, self.params = path, problem, params

    def __str__(self) -> str:
        from attnprep import texts

        return texts.t(f"devcheck.data_{self.problem}", path=self.path, **self.params)


_TOP_KEYS = {"title": str, "difficulty": str, "minutes": int, "order": int, "summary": str, "hints": list,
             "contract": dict}
_OPTIONAL_TOP_KEYS = {"mistakes": list, "notes": dict, "grading": dict, "next": list, "fixes": dict, "stub": dict}
_CONTRACT_KEYS = {"kind": str, "objects": list, "forward": str, "returns": str}
_OPTIONAL_CONTRACT_KEYS = {"constructor": str, "details": str, "params": list}
_PARAM_KEYS = {"name": str, "out": (str, int)}
_OPTIONAL_PARAM_KEYS = {"in": (str, int), "bias": bool, "aliases": list, "type": str, "repeat": str}
_MISTAKE_KEYS = {"id": str, "title": str, "why": str, "fix": str}
_OPTIONAL_MISTAKE_KEYS = {"category": str, "named_by": str, "pair": list, "observed": str, "fix_for": dict,
                          "mask": bool, "early_in_pairs": bool, "evidence": list, "superseded_by": str,
                          "shown_by": str, "any_exercise": bool}
DIFFICULTIES = ("easy", "medium", "hard")
PARAM_TYPES = ("linear", "rmsnorm")


def _check_table(path: str, field: str, table, required: dict, optional: dict) -> None:
    """``table`` has every ``required`` key, no key outside both, each of the type given."""
    if not isinstance(table, dict):
        raise ExerciseDataError(path, "type", field=field or "the file", expected="table", value=table)
    for key in required:
        if key not in table:
            raise ExerciseDataError(path, "missing", field=f"{field} {key}".strip() if field else key)
    unknown = sorted(set(table) - set(required) - set(optional))
    if unknown:
        raise ExerciseDataError(path, "unknown", field=field or "the top level", keys=", ".join(unknown),
                                known=", ".join([*required, *optional]))
    for key, value in table.items():
        expected = {**required, **optional}[key]
        types = expected if isinstance(expected, tuple) else (expected,)
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            names = {str: "string", int: "integer", list: "array", dict: "table", bool: "boolean"}  # TOML's words
            raise ExerciseDataError(path, "type", field=f"{field} {key}".strip(), value=value,
                                    expected=" or ".join(names[t] for t in types))


def _check_data(folder: Path, data: dict) -> None:
    """What the rest of attnprep reads of an exercise.toml, checked once when it is loaded: the keys
    (a typo is unknown, not silently ignored), their types, the contract's layers (their sizes
    named by the constructor's arguments) and the mistakes it lists (each defined somewhere)."""
    import ast

    path = f"exercises/{folder.name}/exercise.toml"
    _check_table(path, "", data, _TOP_KEYS, _OPTIONAL_TOP_KEYS)
    if data["difficulty"] not in DIFFICULTIES:
        raise ExerciseDataError(path, "not_one_of", field="difficulty", value=data["difficulty"],
                                choices=", ".join(DIFFICULTIES))
    contract = data["contract"]
    _check_table(path, "[contract]", contract, _CONTRACT_KEYS, _OPTIONAL_CONTRACT_KEYS)
    constructor = contract.get("constructor", "")
    try:
        args = [a.arg for a in ast.parse(f"def f({constructor}): pass").body[0].args.args]
    except SyntaxError as exc:
        raise ExerciseDataError(path, "type", field="[contract] constructor", value=constructor,
                                expected="Python argument list") from None
    for i, param in enumerate(contract.get("params", [])):
        where = f"[contract] params[{i}]" + (f" ({param['name']})" if isinstance(param, dict) and "name" in param else "")
        _check_table(path, where, param, _PARAM_KEYS, _OPTIONAL_PARAM_KEYS)
        if param.get("type", "linear") not in PARAM_TYPES:
            raise ExerciseDataError(path, "not_one_of", field=f"{where} type", value=param["type"], choices=", ".join(PARAM_TYPES))
        if param.get("type", "linear") == "linear" and "in" not in param:
            raise ExerciseDataError(path, "missing", field=f"{where} in")
        for key in ("in", "out", "repeat"):
            if not isinstance(param.get(key), str) or not param[key]:
                continue
            try:
                names = {n.id for n in ast.walk(ast.parse(param[key].replace(" ", ""), mode="eval")) if isinstance(n, ast.Name)}
            except SyntaxError:
                names = {param[key]}
            unknown = sorted(names - set(args))
            if unknown:
                raise ExerciseDataError(path, "unknown_size", field=f"{where} {key}", value=param[key],
                                        names=", ".join(unknown), args=", ".join(args) or "none")
    catalogue = _mistake_catalogue("en")
    unknown = [m for m in data.get("mistakes", []) if m not in catalogue]
    if unknown:
        raise ExerciseDataError(path, "unknown_mistake", ids=", ".join(unknown), id=folder.name)


def _load(folder: Path, lang: str = "en") -> Exercise:
    import tomllib

    try:
        data = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ExerciseDataError(f"exercises/{folder.name}/exercise.toml", "toml", error=str(exc)) from None
    _check_data(folder, data)
    if lang != "en":
        data = _translate(data, _translation(folder / f"{lang}.toml"))
    c = data["contract"]
    contract = Contract(
        kind=c["kind"],
        objects=tuple(c["objects"]),
        constructor=c.get("constructor", ""),
        forward=c["forward"],
        returns=c["returns"],
        params=tuple(
            Param(
                name=p["name"],
                type=p.get("type", "linear"),
                in_features=p.get("in", ""),
                out_features=p["out"],
                bias=p.get("bias", True),
                aliases=tuple(p.get("aliases", ())),
                repeat=p.get("repeat", ""),
            )
            for p in c.get("params", [])
        ),
        details=c.get("details", "").strip(),
    )
    kind = c.get("kind", "")
    if not (folder / "stub.py.j2").is_file() and not (HERE / "stubs" / f"{kind}.py.j2").is_file():
        # the blank file `new` writes: the kind's shared stub, else the folder's own (a kind whose
        # exercises differ in their objects, attention_functions, shares none)
        raise ExerciseDataError(_shown(folder / "stub.py.j2"), "no_stub", kind=kind)
    catalogue = mistake_catalogue(lang)
    stray = sorted(set(data.get("fixes", {})) - set(data.get("mistakes", [])))
    if stray:  # a fix for a mistake the exercise does not list would never be shown
        raise ValueError(f"[fixes] of {folder.name} names mistakes it does not list: {', '.join(stray)}")
    notes = data.get("notes", {})
    return Exercise(
        id=folder.name,
        title=data["title"],
        difficulty=data["difficulty"],
        minutes=int(data["minutes"]),
        order=int(data["order"]),
        summary=data["summary"].strip(),
        contract=contract,
        hints=tuple(data["hints"]),
        key_points=tuple(notes.get("key_points", [])),
        qa=tuple(QA(q["q"], q["a"]) for q in notes.get("qa", [])),
        mistakes=tuple(_own_fix(catalogue[m].for_exercise(folder.name), data.get("fixes", {})) for m in data.get("mistakes", [])),
        grading=data.get("grading", {}),
        follow_ups=tuple(data.get("next", [])),
    )


def _own_fix(mistake: Mistake, fixes: dict[str, str]) -> Mistake:
    """A shared mistake with the fix the exercise words in its own names (``[fixes]`` of its
    exercise.toml: mistake id -> fix, e.g. a module's x.device where the catalogue's fix has a
    function's q.device), else as the catalogue has it."""
    return mistake._replace(fix=fixes[mistake.id]) if fixes.get(mistake.id) else mistake


def registry(lang: str | None = None) -> dict[str, Exercise]:
    """All exercises by id, in teaching order, their texts in the current language."""
    return _registry(lang or _language())


@functools.cache
def _registry(lang: str) -> dict[str, Exercise]:
    found = [_one(p.parent.name, lang) for p in HERE.glob("*/exercise.toml")]
    return {e.id: e for e in sorted(found, key=lambda e: (e.order, e.id))}


@functools.cache
def _one(exercise_id: str, lang: str) -> Exercise:
    """One exercise, loaded alone (``get`` of a known id reads its folder, not the whole bank's);
    the registry is made of the same objects."""
    return _load(HERE / exercise_id, lang)


class Listing(NamedTuple):
    """What ``attnprep list`` shows of an exercise."""

    id: str
    title: str
    difficulty: str
    minutes: int
    order: int

    @property
    def filename(self) -> str:
        return f"{self.id}.py"


LISTED = ("title", "difficulty", "minutes", "order")


def _head_title(path: Path) -> str | None:
    """The ``title = "…"`` line of a translation file, read without parsing the rest."""
    import tomllib

    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("title"):
            try:
                return tomllib.loads(line).get("title") or None
            except tomllib.TOMLDecodeError:
                return None
        if line.startswith("["):
            return None
    return None


def _listing(path: Path, lang: str = "en") -> Listing:
    """The listing of one exercise.toml, parsed from its first block of lines (where the files keep
    title, difficulty, minutes and order) instead of the whole file: `attnprep list` needs no
    hints, notes, contract nor mistake catalogue. Falls back to the whole file when the head does
    not hold the four keys."""
    import tomllib

    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads("\n".join(itertools.takewhile(str.strip, text.splitlines())))
    except tomllib.TOMLDecodeError:
        data = {}
    if not all(key in data for key in LISTED):
        data = tomllib.loads(text)
    title = (_head_title(path.with_name(f"{lang}.toml")) if lang != "en" else None) or data["title"]
    return Listing(path.parent.name, title, data["difficulty"], int(data["minutes"]), int(data["order"]))


def listing(lang: str | None = None) -> dict[str, Listing]:
    """Every exercise's listing by id, in teaching order (the order of :func:`registry`), its title
    in the current language."""
    return _listings(lang or _language())


@functools.cache
def _listings(lang: str) -> dict[str, Listing]:
    from attnprep import paths

    files = sorted(HERE.glob("*/exercise.toml"))
    translations = [] if lang == "en" else [p.with_name(f"{lang}.toml") for p in files]

    def parse() -> list[list]:
        return [list(_listing(p, lang)) for p in files]

    rows = paths.cached(f"listing-{lang}", files + [p for p in translations if p.is_file()], parse)
    try:
        found = [Listing(*row) for row in rows]
    except TypeError:  # a copy of another shape
        found = [Listing(*row) for row in parse()]
    return {e.id: e for e in sorted(found, key=lambda e: (e.order, e.id))}


def get(exercise_id: str) -> Exercise:
    """The exercise with this id, or :class:`UnknownExercise` with suggestions."""
    key = exercise_id.strip().lower().replace("-", "_")
    if key.isidentifier() and (HERE / key / "exercise.toml").is_file():
        return _one(key, _language())
    exercises = registry()
    if key in exercises:
        return exercises[key]
    import difflib

    raise UnknownExercise(exercise_id, difflib.get_close_matches(key, list(exercises), n=3, cutoff=0.4))


def detect(source: str) -> str | None:
    """The exercise id named on the ``# attnprep: <id>`` line at the top of a file, if any."""
    for line in source.splitlines()[:5]:
        line = line.strip()
        if line.startswith("# attnprep:"):
            return line.split(":", 1)[1].strip().split()[0] if line.split(":", 1)[1].strip() else None
    return None


# --- stubs -------------------------------------------------------------------------------------


def solution_region(exercise: Exercise, name: str) -> str:
    """The text between ``# region <name>`` and ``# endregion <name>`` in the reference solution,
    so a stub can ship ready-made helpers (mla's RoPE) without a second copy of them."""
    lines = exercise.solution_path.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"# region {name}") + 1
    end = lines.index(f"# endregion {name}")
    return "\n".join(lines[start:end]).strip("\n")


def stub_sources(exercise_id: str, lang: str = "en") -> list[Path]:
    """Every file :func:`render_stub` reads for this exercise in ``lang`` (this module is the
    renderer; the texts of the language are its ``texts/<lang>.toml`` and the folder's ``<lang>.toml``)."""
    own = HERE / exercise_id / "stub.py.j2"
    from attnprep import texts

    words = texts.HERE
    translated = HERE / exercise_id / f"{lang}.toml"
    return [HERE / exercise_id / "exercise.toml", *([own] if own.is_file() else []), *sorted((HERE / "stubs").glob("*.j2")),
            *sorted(HERE.glob("**/mistakes*.toml")), SOLUTIONS_DIR / f"{exercise_id}.py", Path(__file__),
            *(p for p in (words / f"{lang}.toml", translated) if p.is_file())]


def render_stub(exercise: Exercise, lang: str | None = None) -> str:
    """The blank exercise file, rendered with jinja2 from its :attr:`Exercise.stub_template`; its
    fixed prose in ``lang`` (default: the current language; the exercise's own texts are those of
    the record given)."""
    import jinja2

    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
    template = env.from_string(exercise.stub_template.read_text(encoding="utf-8"))
    from attnprep import texts

    lang = lang or texts.language()

    def region(name: str) -> str:  # its comments and docstrings in the language, as `solution` shows them
        from attnprep.wording import solution_source

        return solution_source(exercise.id, solution_region(exercise, name), lang)

    return template.render(ex=exercise, solution_region=region, own=stub_words(exercise.folder, lang),
                           t=lambda key, **params: texts.t(key, lang, **params))


def stub_words(folder: Path, lang: str) -> dict[str, str]:
    """The prose of one exercise's own stub (its ``[stub]`` table: ``exercise.toml`` in English,
    over it the one of ``<lang>.toml``)."""
    import tomllib

    words = dict(tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8")).get("stub", {}))
    if lang != "en":
        words.update(_translation(folder / f"{lang}.toml").get("stub", {}))
    return {key: text.strip("\n") for key, text in words.items()}


def _normalised(text: str) -> str:
    """What telling a blank file needs: trailing spaces, line endings and blank lines at either
    end are not an edit (an editor that trims or adds them leaves the stub blank)."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def is_blank(exercise_id: str, source: str) -> bool:
    """``source`` is the exercise's untouched stub, in either language: the one test ``list``,
    ``check``, ``stats`` and ``today`` share (cheap unless it looks like a stub)."""
    if "NotImplementedError" not in source:
        return False
    from attnprep import texts

    mine = _normalised(source)
    first = texts.language()  # the language in use first: a stub made in either language is blank
    for lang in (first, *(lang for lang in texts.LANGUAGES if lang != first)):
        try:
            blank = blank_stub(exercise_id, lang)
        except Exception:  # noqa: BLE001 — a stub that cannot be rendered is never what the user wrote
            continue
        if mine == _normalised(blank):
            return True
    return False


def blank_stub(exercise_id: str, lang: str | None = None) -> str:
    """The rendered stub, kept in the data folder's cache under a key of the size and modification
    time of every file it is rendered from (as Python keys its bytecode): telling a blank file
    from an edited one then needs neither jinja2 nor the whole registry. The cache is only an
    optimisation: any problem with it means rendering afresh."""
    import os

    import attnprep
    from attnprep import paths, texts

    lang = lang or texts.language()
    cached = None
    try:
        key = f"{attnprep.__version__} {lang} " + " ".join(
            f"{st.st_mtime_ns}:{st.st_size}" for st in (p.stat() for p in stub_sources(exercise_id, lang)))
        cached = paths.data_home() / "cache" / f"stub-{exercise_id}{'' if lang == 'en' else '.' + lang}.py"
        head, _, text = cached.read_text(encoding="utf-8").partition("\n")
        if head == f"# key: {key}":
            return text
    except (OSError, UnicodeDecodeError):
        pass
    text = render_stub(registry(lang)[get(exercise_id).id], lang)
    if cached is not None:  # set only once the key is known
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        try:
            cached.parent.mkdir(exist_ok=True)
            tmp.write_text(f"# key: {key}\n{text}", encoding="utf-8", newline="\n")
            os.replace(tmp, cached)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
    return text


def cache_clear() -> None:
    """Forget every loaded exercise, listing and mistake, in every language (a folder was added)."""
    _registry.cache_clear()
    _one.cache_clear()
    _listings.cache_clear()
    _mistake_catalogue.cache_clear()


# ``registry.cache_clear()`` and the like, as when these were functools.cache functions themselves
registry.cache_clear = listing.cache_clear = mistake_catalogue.cache_clear = cache_clear  # type: ignore[attr-defined]
