"""The driver JVM's class archive (:mod:`conformance.spark.class_cache`) without a JVM: where it lives, what it
is keyed by, and that only a whole dump ever takes the archive's name (a JVM reading a truncated archive dies).
``tests/spark/test_spark_class_cache_cli.py`` runs real JVMs with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.spark.class_cache import ClassCache, cache_directory


def test_the_cache_directory_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KEYSHARED_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "pytest-keyshared"
    monkeypatch.setenv("KEYSHARED_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_directory() == tmp_path / "mine"


def test_an_archive_is_one_jvm_configurations(tmp_path: Path) -> None:
    base = ClassCache("-XX:+UseSerialGC", "1g", tmp_path)
    assert base.name == ClassCache("-XX:+UseSerialGC", "1g", tmp_path).name
    assert base.name != ClassCache("-XX:+UseSerialGC", "4g", tmp_path).name  # compressed pointers differ
    assert base.name != ClassCache("-XX:+UseG1GC", "1g", tmp_path).name


def dump_path(options: str) -> Path:
    first = options.split()[0]
    assert first.startswith("-XX:ArchiveClassesAtExit=")
    return Path(first.split("=", 1)[1])


def test_a_first_run_dumps_into_a_file_of_its_own_and_only_a_whole_dump_is_kept(tmp_path: Path) -> None:
    cache = ClassCache("", "1g", tmp_path)
    dumped = dump_path(cache.java_options())
    assert cache.dumping and dumped.parent == cache.directory and cache.archive is None
    dumped.write_bytes(b"")  # the JVM wrote nothing: nothing is kept
    cache.finish()
    assert cache.archive is None and not dumped.exists() and not cache.dumping
    again = ClassCache("", "1g", tmp_path)
    dumped = dump_path(again.java_options())
    dumped.write_bytes(b"classes")
    again.finish()
    archive = cache.archive
    assert archive is not None and archive.read_bytes() == b"classes" and not dumped.exists()
    assert archive.name == f"{cache.name}-7.jsa"  # its size in its name
    reader = ClassCache("", "1g", tmp_path)
    assert f"-XX:SharedArchiveFile={archive}" in reader.java_options() and not reader.dumping
    assert "-Xlog:cds*=off" in reader.java_options()  # nothing on the command's standard output
    reader.abandon()  # the JVM would not start with it: gone, the next run dumps anew
    assert cache.archive is None and not archive.exists()


def test_an_archive_cut_short_is_never_read(tmp_path: Path) -> None:
    """A JVM mapping a truncated archive dies (SIGBUS): one whose size is not the one its name records is
    removed, and the run dumps anew."""
    cache = ClassCache("", "1g", tmp_path)
    dump_path(cache.java_options()).write_bytes(b"0123456789")
    cache.finish()
    archive = cache.archive
    assert archive is not None
    archive.write_bytes(b"01234")
    reader = ClassCache("", "1g", tmp_path)
    assert reader.java_options().startswith("-XX:ArchiveClassesAtExit=") and not archive.exists()


def test_no_archive_where_the_directory_cannot_be_made(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = ClassCache("", "1g", blocked)
    assert cache.java_options() == "" and not cache.dumping
    cache.finish()  # nothing to do


def test_it_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEYSHARED_SPARK_CLASS_CACHE", "off")
    assert not ClassCache.enabled()
    monkeypatch.delenv("KEYSHARED_SPARK_CLASS_CACHE")
    assert ClassCache.enabled()


def test_a_jvm_that_will_not_start_with_the_archive_starts_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start (``conformance.spark.session._started``) retries once without the archive, which is removed."""
    from conformance.spark.session import _started

    monkeypatch.setenv("KEYSHARED_CACHE_DIR", str(tmp_path))
    conf = {"spark.driver.extraJavaOptions": "-XX:+UseSerialGC", "spark.driver.memory": "1g"}
    cache = ClassCache(conf["spark.driver.extraJavaOptions"], "1g")
    dump_path(cache.java_options()).write_bytes(b"classes")
    cache.finish()
    assert cache.archive is not None
    starts: list[str] = []

    def start(settings: dict[str, str]) -> str:
        starts.append(settings["spark.driver.extraJavaOptions"])
        if "SharedArchiveFile" in starts[-1]:
            raise RuntimeError("Java gateway process exited before sending its port number")
        return "context"

    assert _started(start, conf, class_cache=True) == ("context", None)
    assert len(starts) == 2 and starts[1] == "-XX:+UseSerialGC" and cache.archive is None
    assert _started(start, conf, class_cache=False) == ("context", None)  # not asked: as configured
    assert starts[2] == "-XX:+UseSerialGC"
