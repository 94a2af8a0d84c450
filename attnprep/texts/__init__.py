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


def render(message, lang: str | None = None) -> str:
    """A :class:`~attnprep.grader.result.Message` (or None) as text. Parameters that are
    Messages themselves (a nested reason) and the grader's names of cases, calls and outputs
    (:class:`~attnprep.grader.result.Name`, :class:`~attnprep.grader.result.Names`) are said in
    the language first (:func:`say`)."""
    if message is None:
        return ""
    lang = lang or language()
    params = {}
    for k, v in message.params.items():
        if hasattr(v, "key") and hasattr(v, "params") or hasattr(v, "quoted") or getattr(v, "said", None):
            v = say(v, lang)
        params[k] = v
    return t(message.key, lang, **params)


def say(name, lang: str | None = None) -> str:
    """One of the grader's names (:class:`~attnprep.grader.result.Name`: a case, a call of a
    script, an output) in ``lang``, from its text key; a list of them
    (:class:`~attnprep.grader.result.Names`) joined by the language's comma; a plain string as it is."""
    lang = lang or language()
    if hasattr(name, "quoted"):  # Names
        parts = [say(n, lang) for n in name.names]
        if name.quoted:
            parts = [t("name.quoted", lang, name=p) for p in parts]
        return t("name.comma", lang).join(parts) + (t("name.more", lang) if name.more else "")
    if getattr(name, "said", None) and lang in name.said:  # an exercise's own name, in its own words
        return name.said[lang]
    if hasattr(name, "key") and hasattr(name, "params"):
        return render(name, lang)
    return name if isinstance(name, str) else str(name)
