"""The JSON copies of what every command reads first (paths.cached): an accelerator that is
never wrong, never needed, and never creates the data folder."""

import json
import tomllib

from attnprep import paths, texts


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_copy_is_used_then_refreshed_when_a_source_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPREP_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    source = tmp_path / "a.toml"
    source.write_text("x = 1\n")
    compute, calls = _counting({"x": 1})
    assert paths.cached("a", [source], compute) == {"x": 1}
    assert paths.cached("a", [source], compute) == {"x": 1}
    assert len(calls) == 1  # the second came from the copy
    source.write_text("x = 22\n")  # another size: another key
    compute2, calls2 = _counting({"x": 22})
    assert paths.cached("a", [source], compute2) == {"x": 22}
    assert len(calls2) == 1


def test_a_broken_or_foreign_copy_means_computing_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPREP_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "cache").mkdir(parents=True)
    source = tmp_path / "a.toml"
    source.write_text("x = 1\n")
    compute, calls = _counting([1, 2])
    paths.cached("a", [source], compute)
    copy = tmp_path / "home" / "cache" / "a.json"
    head = copy.read_text().split("\n", 1)[0]
    for broken in (f"{head}\n{{not json", "garbage", "", f"{head}"):
        copy.write_text(broken)
        assert paths.cached("a", [source], compute) == [1, 2]
    assert len(calls) == 5


def test_no_data_folder_is_created_for_a_copy(tmp_path, monkeypatch):
    home = tmp_path / "nowhere"
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    source = tmp_path / "a.toml"
    source.write_text("x = 1\n")
    compute, calls = _counting(7)
    assert paths.cached("a", [source], compute) == 7
    assert paths.cached("a", [source], compute) == 7
    assert not home.exists() and len(calls) == 2


def test_a_read_only_data_folder_still_gives_the_value(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    (home / "cache").write_text("a file where the cache folder would be")
    source = tmp_path / "a.toml"
    source.write_text("x = 1\n")
    assert paths.cached("a", [source], lambda: {"ok": True}) == {"ok": True}
    assert sorted(p.name for p in home.iterdir()) == ["cache"]  # no temporary file left behind


def test_the_texts_read_through_the_copy_are_the_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPREP_HOME", str(tmp_path))
    for lang in texts.LANGUAGES:
        expected = texts._flatten(tomllib.loads((texts.HERE / f"{lang}.toml").read_text(encoding="utf-8")))
        texts.catalogue.cache_clear()
        first = texts.catalogue(lang)  # parses, writes the copy
        texts.catalogue.cache_clear()
        second = texts.catalogue(lang)  # reads the copy
        assert first == second == expected
        copy = tmp_path / "cache" / f"texts-{lang}.json"
        assert json.loads(copy.read_text(encoding="utf-8").split("\n", 1)[1]) == expected
    texts.catalogue.cache_clear()


def test_the_listing_read_through_the_copy_is_the_registry(tmp_path, monkeypatch):
    from attnprep import exercises

    monkeypatch.setenv("ATTNPREP_HOME", str(tmp_path))
    for lang in ("en", "zh"):
        exercises._listings.cache_clear()
        first = exercises._listings(lang)
        exercises._listings.cache_clear()
        second = exercises._listings(lang)
        assert first == second
        assert list(first) == list(exercises.registry(lang))
        assert {e.id: e.title for e in first.values()} == {e.id: e.title for e in exercises.registry(lang).values()}
        assert (tmp_path / "cache" / f"listing-{lang}.json").is_file()
    exercises._listings.cache_clear()
