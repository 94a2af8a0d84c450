"""Every text exists in both languages, with the same placeholders, and the Chinese is Chinese.

Generic: it reads the language files themselves, so keys added later are checked too.
"""

from __future__ import annotations

import re
import string

import pytest

from attnprep import texts

CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")
# a value that is only code, symbols, ids or placeholders needs no Chinese
CODEISH = re.compile(r"^[\w\s{}()\[\]/.:,'`*+=<>!|#\\-]*$", re.ASCII)


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_same_keys_in_every_language():
    en, zh = texts.catalogue("en"), texts.catalogue("zh")
    assert en and zh
    assert sorted(set(en) - set(zh)) == [], "keys missing in zh.toml"
    assert sorted(set(zh) - set(en)) == [], "keys missing in en.toml"


@pytest.mark.parametrize("key", sorted(texts.catalogue("en")))
def test_placeholders_match(key):
    zh = texts.catalogue("zh").get(key)
    assert zh is not None, f"{key} missing in zh.toml"
    assert placeholders(zh) == placeholders(texts.catalogue("en")[key]), key


@pytest.mark.parametrize("key", sorted(texts.catalogue("zh")))
def test_chinese_value_is_chinese(key):
    value = texts.catalogue("zh")[key]
    stripped = re.sub(r"\{[^}]*\}", "", value)
    if CODEISH.match(stripped) and texts.catalogue("en").get(key) == value:
        return  # pure code / symbols, same in both languages
    assert CJK.search(value), f"{key} = {value!r} has no Chinese"


def test_t_follows_the_language(monkeypatch):
    monkeypatch.setenv("ATTNPREP_LANG", "zh")
    assert texts.t("verdict.passed") == "通过"
    monkeypatch.setenv("ATTNPREP_LANG", "en")
    assert texts.t("verdict.passed") == "passed"
    monkeypatch.delenv("ATTNPREP_LANG")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert texts.language() == "zh"
