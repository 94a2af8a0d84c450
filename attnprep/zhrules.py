"""The rules a Chinese text of an exercise is held to (SPEC §9), one source for the tests
(tests/test_zh_texts.py, test_zh.py, test_zh_solutions.py) and ``attnprep dev check``.

Each Chinese text is held against its English: Chinese unless it is pure code; the code of the
English (shape literals, snake_case identifiers, backtick spans, numbers) unchanged in the Chinese;
no English sentence left over; Chinese punctuation inside Chinese sentences.
"""

from __future__ import annotations

import re

HAN = re.compile(r"[\u4e00-\u9fff]")
# Three or more plain words in a row: prose. Code has dots, brackets and operators between its words.
PROSE = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?:,? [A-Za-z]{2,}){2,}(?![\w(])(?!\.\w)")
# Four or more: an English sentence (or most of one) left untranslated.
ENGLISH_RUN = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?:,? [A-Za-z]{2,}){3,}(?![\w(])(?!\.\w)")
# Quoted text may stay English: an error message, a paper title, a string in code.
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|“[^”]*”|《[^》]*》|`[^`]*`")
_ITEM = r"[A-Za-z0-9_]+(?:\s*(?://|\*\*|[·*+/-])\s*[A-Za-z0-9_]+)*"
SHAPE = re.compile(rf"\({_ITEM}(?:,\s*{_ITEM})+\)")
IDENTIFIER = re.compile(r"(?<!\w)[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?!\w)")
BACKTICKS = re.compile(r"`[^`]+`")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

_HAN_RANGE = "\u3400-\u4dbf\u4e00-\u9fff"
ASCII_PUNCT_BY_HAN = re.compile(rf"(?<=[{_HAN_RANGE}])[,:;]|[,:;](?= ?[{_HAN_RANGE}])")
NOT_PROSE = re.compile(r"`[^`]*`|\[[^\]\n]*\]")  # code spans; [a; b] is the notation of a concatenation


def english_texts(data: dict) -> dict:
    """The user-facing texts of an exercise.toml, in its nesting (no difficulty, contract kind,
    params, grading, mistake ids...)."""
    out = {key: data[key] for key in ("title", "summary", "hints") if key in data}
    if "details" in data.get("contract", {}):
        out["contract"] = {"details": data["contract"]["details"]}
    if not data.get("contract", {}).get("returns", "(").startswith("("):  # said in words, not a shape
        out.setdefault("contract", {})["returns"] = data["contract"]["returns"]
    if "stub" in data:  # the prose of the exercise's own stub template
        out["stub"] = data["stub"]
    if "fixes" in data:  # shared mistakes' fixes in the exercise's own names
        out["fixes"] = data["fixes"]
    notes = data.get("notes", {})
    if notes:
        out["notes"] = {}
        if "key_points" in notes:
            out["notes"]["key_points"] = notes["key_points"]
        if "qa" in notes:
            out["notes"]["qa"] = [{"q": qa["q"], "a": qa["a"]} for qa in notes["qa"]]
    return out


def flat(value, path: str = ""):
    """(path, text) for every string, e.g. ("notes.qa[2].a", "...")."""
    if isinstance(value, dict):
        for key, v in value.items():
            yield from flat(v, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from flat(v, f"{path}[{i}]")
    else:
        yield path, value


def is_code(text: str) -> bool:
    """Pure code: an assignment or a matmul with no run of plain words (a title like "used a
    built-in" has no run of three words either, but it is not code)."""
    return bool(re.search(r"[=@]", text)) and not PROSE.search(text)


def shapes(text: str) -> set[str]:
    """Shape literals such as (B, H, T, D), (seq_len, seq_len), (768, 2304): a parenthesised list
    of at least two names or numbers, one of them with a capital, a digit or an underscore, none a
    capitalised word (so that prose in brackets, "(syntax, position, coreference)" or a citation
    "(GQA, 2023)", is not a shape)."""
    found = set()
    for m in SHAPE.finditer(text):
        items = [item.strip() for item in m.group()[1:-1].split(",")]
        if any(re.search(r"[A-Z0-9_]", item) for item in items) and not any(
            re.fullmatch(r"[A-Z][A-Za-z]+", item) for item in items
        ):
            found.add(m.group())
    return found


def problems(path: str, en: str, zh: str) -> list[str]:
    """What is wrong with the Chinese ``zh`` of the English text ``en`` (empty if nothing)."""
    found = []
    if not isinstance(zh, str) or not zh.strip():
        return [f"{path}: empty"]
    if not HAN.search(zh) and not (is_code(en) and zh == en):
        found.append(f"{path}: no Chinese in {zh!r}")
    for kind, pattern in (("shape", shapes), ("identifier", IDENTIFIER.findall), ("code span", BACKTICKS.findall)):
        for token in sorted(set(pattern(en))):
            if token not in zh:
                found.append(f"{path}: {kind} {token} of the English is missing")
    if not path.endswith("title"):  # a title may say "忘了除以 √d" for "missing 1/sqrt(d) scale"
        for number in sorted(set(NUMBER.findall(en))):
            if number not in zh:
                found.append(f"{path}: number {number} of the English is missing")
    left = ENGLISH_RUN.search(QUOTED.sub("", zh))
    if left:
        found.append(f"{path}: English left untranslated: {left.group()!r}")
    return found


def ascii_punctuation_by_chinese(text: str) -> list[str]:
    """The lines of ``text`` with an ASCII comma, colon or semicolon beside a Chinese character."""
    return [line for line in text.splitlines() if ASCII_PUNCT_BY_HAN.search(NOT_PROSE.sub(" ", line))]


def zh_strings(value):
    """Every string of parsed TOML (:func:`flat`'s texts)."""
    return (text for _, text in flat(value) if isinstance(text, str))
