"""Tests for ``picklable._reduce.guard_store``: main-guard answers kept on disk."""

from __future__ import annotations

import os

import pytest

from picklable._reduce import guard_store
from picklable._reduce.main_guard import answers

SOURCE = b"""
import sys
CONFIG = 1

def main():
    global CONFIG
    CONFIG = 2
    sys.stdout.flush()

if __name__ == "__main__":
    main()
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PICKLABLE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "guard"


def _entry_file(store):
    (entry,) = store.iterdir()
    return entry


class TestRoundTrip:
    def test_an_answer_comes_back_as_kept(self, store, tmp_path):
        """What the guard binds and calls, kept, is read back equal, as frozensets."""
        script = tmp_path / "job.py"
        script.write_bytes(SOURCE)
        read = answers(str(script), SOURCE)
        assert read == (
            (frozenset({"CONFIG"}), frozenset({"sys"})),
            frozenset({"sys", "CONFIG", "main"}),
            (),
        )
        assert guard_store.lookup(str(script), SOURCE) is guard_store.MISS
        guard_store.keep(str(script), SOURCE, *read)
        assert guard_store.lookup(str(script), SOURCE) == read
        assert oct(_entry_file(store).stat().st_mode & 0o777) == oct(0o600)

    def test_cannot_tell_is_kept_too(self, store, tmp_path):
        """None (the guard runs exec, a star import: any name may differ) is an
        answer, not a miss, for either question."""
        guard_store.keep(str(tmp_path / "a.py"), b"x", None, None)
        assert guard_store.lookup(str(tmp_path / "a.py"), b"x") == (None, None, ())
        guard_store.keep(str(tmp_path / "a.py"), b"x", None, frozenset({"a"}))
        assert guard_store.lookup(str(tmp_path / "a.py"), b"x") == (None, frozenset({"a"}), ())

    def test_what_is_bound_again_between_guards_comes_back(self, store, tmp_path):
        """Each statement between two guards that binds names again, with its line."""
        script = tmp_path / "two.py"
        source = (
            b"A = B = 1\nif __name__ == '__main__':\n    run()\nA = 2\nB, C = 3, 4\n"
            b"if __name__ == '__main__':\n    run()\n"
        )
        script.write_bytes(source)
        read = answers(str(script), source)
        assert read[2] == ((4, frozenset({"A"})), (5, frozenset({"B"})))
        guard_store.keep(str(script), source, *read)
        assert guard_store.lookup(str(script), source) == read

    def test_one_entry_per_script_path(self, store, tmp_path):
        """A new version of the script replaces its entry: the store grows with the
        scripts run, not with their edits."""
        name = str(tmp_path / "a.py")
        guard_store.keep(name, b"one", (frozenset({"a"}), frozenset()), frozenset())
        guard_store.keep(name, b"two", (frozenset({"b"}), frozenset()), frozenset())
        assert [p.name for p in store.iterdir()] == [_entry_file(store).name]
        assert guard_store.lookup(name, b"one") is guard_store.MISS
        assert guard_store.lookup(name, b"two") == (
            (frozenset({"b"}), frozenset()),
            frozenset(),
            (),
        )


class TestMisses:
    def test_another_source_misses(self, store, tmp_path):
        """An entry answers for the bytes it was read from: an edit is a miss."""
        name = str(tmp_path / "a.py")
        guard_store.keep(name, SOURCE, (frozenset(), frozenset()), None)
        assert guard_store.lookup(name, SOURCE + b"\n# edited") is guard_store.MISS

    def test_another_path_misses(self, store, tmp_path):
        guard_store.keep(str(tmp_path / "a.py"), SOURCE, (frozenset(), frozenset()), None)
        assert guard_store.lookup(str(tmp_path / "b.py"), SOURCE) is guard_store.MISS

    def test_another_reader_misses(self, store, tmp_path, monkeypatch):
        """An answer read by other code (main_guard.py changed) or another Python
        is not trusted."""
        name = str(tmp_path / "a.py")
        guard_store.keep(name, SOURCE, (frozenset({"a"}), frozenset()), None)
        monkeypatch.setattr(guard_store, "_analysis", ["cpython-399 1 2"])
        assert guard_store.lookup(name, SOURCE) is guard_store.MISS

    @pytest.mark.parametrize(
        "damage",
        [
            lambda text: text[: len(text) // 2],  # cut short
            lambda text: text.replace("bound 1", "bound 2"),  # a count that lies
            lambda text: text.replace("bound 1", "bond 1"),
            lambda text: text.replace("\nCONFIG\n", "\nnot a name\n", 1),
            lambda text: text + "extra\n",
            lambda text: text.replace("picklable guard answer 3", "picklable guard answer 9"),
            lambda text: text.replace("between 1\n", "between 2\n"),
            lambda text: text.replace("\n7 CONFIG\n", "\n7\n"),
            lambda text: text.replace("\n7 CONFIG\n", "\nseven CONFIG\n"),
            lambda text: text.replace("\nbetween 1\n7 CONFIG\n", "\n"),
            lambda text: text.replace("bound 1", "bound none"),
            lambda text: text.replace("\nunguarded 1\nCONFIG\n", "\n"),
            lambda text: text.rstrip("\n"),
            lambda text: "",
        ],
    )
    def test_a_damaged_entry_misses(self, store, tmp_path, damage):
        """Anything but an entry in the format is a miss, never an answer."""
        name = str(tmp_path / "a.py")
        guard_store.keep(
            name,
            SOURCE,
            (frozenset({"CONFIG"}), frozenset({"sys"})),
            frozenset({"CONFIG"}),
            ((7, frozenset({"CONFIG"})),),
        )
        entry = _entry_file(store)
        assert guard_store.lookup(name, SOURCE) is not guard_store.MISS
        entry.write_text(damage(entry.read_text()))
        assert guard_store.lookup(name, SOURCE) is guard_store.MISS

    def test_non_ascii_bytes_miss(self, store, tmp_path):
        name = str(tmp_path / "a.py")
        guard_store.keep(name, SOURCE, (frozenset({"CONFIG"}), frozenset()), None)
        entry = _entry_file(store)
        entry.write_bytes(entry.read_bytes().replace(b"CONFIG", "CONFIGé".encode()))
        assert guard_store.lookup(name, SOURCE) is guard_store.MISS


class TestWhereAndWhen:
    def test_an_empty_setting_turns_the_store_off(self, tmp_path, monkeypatch):
        monkeypatch.setenv("PICKLABLE_CACHE_DIR", "")
        assert guard_store.directory() is None
        guard_store.keep(str(tmp_path / "a.py"), SOURCE, (frozenset(), frozenset()), None)
        assert guard_store.lookup(str(tmp_path / "a.py"), SOURCE) is guard_store.MISS

    def test_the_default_is_the_users_cache(self, tmp_path, monkeypatch):
        monkeypatch.delenv("PICKLABLE_CACHE_DIR")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert guard_store.directory() == str(tmp_path / "xdg" / "picklable" / "guard")
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert guard_store.directory() == str(tmp_path / "home" / ".cache" / "picklable" / "guard")

    def test_an_unwritable_store_is_skipped_quietly(self, tmp_path, monkeypatch):
        """A cache directory that cannot be made (a file in its place) keeps
        nothing and raises nothing: the answer is read again next time."""
        (tmp_path / "blocked").write_text("a file, not a directory")
        monkeypatch.setenv("PICKLABLE_CACHE_DIR", str(tmp_path / "blocked"))
        guard_store.keep(str(tmp_path / "a.py"), SOURCE, (frozenset(), frozenset()), None)
        assert guard_store.lookup(str(tmp_path / "a.py"), SOURCE) is guard_store.MISS
        assert os.listdir(tmp_path) == ["blocked"]

    def test_names_that_are_not_identifiers_are_not_kept(self, store, tmp_path):
        """globals()["a b"] = ...: such an answer is read from the script each time."""
        name = str(tmp_path / "a.py")
        guard_store.keep(name, SOURCE, (frozenset({"a b"}), frozenset()), None)
        assert not store.exists() or not list(store.iterdir())
        assert guard_store.lookup(name, SOURCE) is guard_store.MISS
