"""The words of attnprep, one file per language, keyed by id.

The grader returns ids and numbers (:class:`attnprep.grader.result.Message`); the report and
``check --json`` turn them into sentences here::

    from attnprep import texts
    texts.render(message)            # a Message in the current language
    texts.t("verdict.wrong_output")  # a plain key
    texts.language()                 # "en" or "zh"

A language file is ``<lang>.toml`` beside this module; its tables nest the dotted keys
(``[check] output.ok = "…"`` is ``check.output.ok``). Only the file of the language in use is read,
on first use. A key missing in the chosen language falls back to English (a test makes sure none
is missing). Torch-free.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "zh")
_override: str | None = None  # set by --lang for this process


def set_language(lang: str | None) -> None:
    """Use ``lang`` from now on in this process (``--lang``); None: back to the environment."""
    global _override
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: choose {' or '.join(LANGUAGES)}")
    _override = lang


def language() -> str:
    """--lang, else $ATTNPREP_LANG, else the locale ($LC_ALL, $LC_MESSAGES, $LANG: zh_* gives zh),
    else English. Read at call time."""
    if _override:
        return _override
    chosen = os.environ.get("ATTNPREP_LANG", "").strip().lower()
    if chosen:
        return "zh" if chosen.startswith("zh") else "en"
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def environment_problem() -> str | None:
    """What is wrong with $ATTNPREP_LANG (a language attnprep does not have), said as `--lang` says
    it, or None. Only attnprep's own setting is checked: a locale in another language is English."""
    chosen = os.environ.get("ATTNPREP_LANG", "").strip()
    if not chosen or chosen.lower().startswith(LANGUAGES):
        return None
    return t("shell.bad_env_lang", lang=chosen)


def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """Every text of one language by key ({} when the language has no file yet)."""
    path = HERE / f"{lang}.toml"
    if not path.is_file():
        return {}
    from attnprep import paths

    def parse() -> dict[str, str]:
        import tomllib

        return _flatten(tomllib.loads(path.read_text(encoding="utf-8")))

    texts = paths.cached(f"texts-{lang}", [path], parse)
    return texts if isinstance(texts, dict) else parse()


class _Lenient(dict):
    """Format parameters: a placeholder without a value shows as ``{name}`` instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def t(key: str, lang: str | None = None, /, **params: Any) -> str:
    """The text of ``key`` in ``lang`` (default: :func:`language`), formatted with ``params``."""
    lang = lang or language()
    text = catalogue(lang).get(key)
    if text is None:
        text = catalogue("en").get(key)
    if text is None:
        return key if not params else f"{key} {params}"
    try:
        return text.format_map(_Lenient(params))
    except (ValueError, TypeError, IndexError, AttributeError):  # a parameter of another type
        return text


def has(key: str, lang: str | None = None) -> bool:
    return key in catalogue(lang or language()) or key in catalogue("en")


# Parameters that carry the grader's English names of cases, steps, stages and outputs (see term()).
TERM_PARAMS = frozenset({"case", "cases", "stage", "step", "output", "before", "after", "names", "shapes"})


def render(message, lang: str | None = None) -> str:
    """A :class:`~attnprep.grader.result.Message` (or None) as text. Parameters that are
    Messages themselves (a nested reason) are rendered first; the grader's names of cases, steps
    and outputs (:data:`TERM_PARAMS`) are said in the language (:func:`term`)."""
    if message is None:
        return ""
    lang = lang or language()
    params = {}
    for k, v in message.params.items():
        if hasattr(v, "key") and hasattr(v, "params"):
            v = render(v, lang)
        elif k in TERM_PARAMS and isinstance(v, str):
            v = term(v, lang)
        params[k] = v
    return t(message.key, lang, **params)


@functools.cache
def _phrases(lang: str) -> tuple[tuple[re.Pattern, str], ...]:
    """The phrases of ``names.<lang>.toml`` as (pattern, replacement), in the file's order."""
    path = HERE / f"names.{lang}.toml"
    if not path.is_file():
        return ()
    import tomllib

    out = []
    for english, said in tomllib.loads(path.read_text(encoding="utf-8"))["phrases"].items():
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^\\s,()]+?)", re.escape(english))
        if english[0].isalnum():
            pattern = r"(?<![\w.-])" + pattern
        if english[-1].isalnum() or english.endswith("}"):
            pattern += r"(?![\w.-])"
        out.append((re.compile(pattern), re.sub(r"\{(\w+)\}", r"\\g<\1>", said.replace("\\", "\\\\"))))
    return tuple(out)


def term(name: str, lang: str | None = None) -> str:
    """One of the grader's English names of a case, a step, a stage or an output
    ("padded, padding changed", "step 2 out (pos 5)") in ``lang``: its phrases replaced by those of
    ``names.<lang>.toml`` (English: as it is). A comma outside brackets between translated parts
    becomes the language's own."""
    phrases = _phrases(lang or language())
    if not phrases or not name:
        return name
    said = name
    for pattern, replacement in phrases:
        said = pattern.sub(replacement, said)
    if said == name:
        return name
    out, depth, skip = [], 0, False
    for i, ch in enumerate(said):  # ", " at bracket depth 0 separates the parts of a list
        if skip:
            skip = False
            continue
        depth += 1 if ch in "(（[" else -1 if ch in ")）]" else 0
        if ch == "," and depth == 0 and said[i + 1:i + 2] == " ":
            out.append("，")
            skip = True
        else:
            out.append(ch)
    return "".join(out)
