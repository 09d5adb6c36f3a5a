"""A class-data-sharing archive for the Spark driver's JVM: Spark's classes loaded from a file, not from jars.

Most of a Spark session's start is the JVM loading and verifying Spark's classes: measured on a 2-core
machine, a ``local[2]`` context started in 6.1 s and its first job took 3.2 s; with an archive of the classes
a first run loaded (Java's dynamic class-data sharing, JDK 13 and later), 3.5 s and 2.5 s.  A short trace's
``keyshared check --engine spark`` is mostly that start.

The archive is made by the first run that finds none: its JVM dumps the classes it loaded when it exits
(``-XX:ArchiveClassesAtExit``), into a file of its own, which :meth:`ClassCache.finish` — called once the JVM
has exited (:func:`conformance.spark.session.stop`) — renames into place.  A JVM reading a truncated archive
dies (SIGBUS), so only a complete file is ever at the archive's name; a JVM that will not start with the
archive is started again without it, and the archive removed (:func:`conformance.spark.session.build_context`).
An archive matches one JVM build, one pyspark and the driver's memory and garbage collector (its file name is a
hash of them); another JVM ignores it.

Where: ``$KEYSHARED_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-keyshared``, else ``~/.cache/pytest-keyshared``;
about 70 MB an archive.  ``KEYSHARED_SPARK_CLASS_CACHE=off`` turns it off.  A directory that cannot be written
means no archive, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
from pathlib import Path

__all__ = ["ClassCache", "cache_directory"]


def cache_directory() -> Path:
    """This project's cache directory (see the module)."""
    given = os.environ.get("KEYSHARED_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-keyshared"


class ClassCache:
    """The archive for one driver JVM configuration (``java_options``: the options it starts with, which name
    its garbage collector; ``memory``: its heap), and how a run uses it."""

    def __init__(self, java_options: str, memory: str, directory: Path | None = None) -> None:
        self.directory = (directory or cache_directory()) / "spark-classes"
        self.name = _fingerprint(java_options, memory)
        self._dumping: Path | None = None
        self._reading: Path | None = None

    @property
    def archive(self) -> Path | None:
        """The archive, if a whole one is here: its name ends in its size (``<fingerprint>-<bytes>.jsa``), so
        a file cut short — which would kill the JVM mapping it — is never read, but removed."""
        for path in self.directory.glob(f"{self.name}-*.jsa"):
            size = path.stem.rpartition("-")[2]
            try:
                if size.isdigit() and path.stat().st_size == int(size):
                    return path
                path.unlink()
            except OSError:
                continue
        return None

    @property
    def dumping(self) -> bool:
        """Whether this run's JVM dumps an archive at exit (:meth:`finish` then keeps it)."""
        return self._dumping is not None

    @staticmethod
    def enabled() -> bool:
        return os.environ.get("KEYSHARED_SPARK_CLASS_CACHE", "").lower() not in ("off", "0", "false", "no")

    def java_options(self) -> str:
        """The JVM options of a run: read the archive, or (none yet) dump one at exit into a file of this
        run's; empty when the directory cannot be written."""
        archive = self.archive if self.directory.is_dir() else None
        if archive is not None:  # a crash report (an archive gone bad) goes beside it, not to the working dir
            self._reading = archive
            crash = f"-XX:ErrorFile={self.directory}/hs_err_pid%p.log"
            return f"-XX:SharedArchiveFile={archive} -Xshare:auto {crash} {_QUIET}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            return ""
        if not os.access(self.directory, os.W_OK):
            return ""
        self._dumping = self.directory / f".{self.name}.{os.getpid()}.jsa"
        return f"-XX:ArchiveClassesAtExit={self._dumping} {_QUIET}"

    def finish(self) -> None:
        """After the JVM exited: the archive it dumped, if any, takes its place under a name that records its
        size (a rename: atomic)."""
        dumped, self._dumping = self._dumping, None
        if dumped is None:
            return
        with contextlib.suppress(OSError):
            size = dumped.stat().st_size if dumped.is_file() else 0
            if size:
                os.replace(dumped, self.directory / f"{self.name}-{size}.jsa")
            else:
                dumped.unlink(missing_ok=True)

    def abandon(self) -> None:
        """The JVM did not exit cleanly (or would not start with the archive): nothing of this run is kept, and
        an archive it read is removed (the next run makes another)."""
        dumped, self._dumping = self._dumping, None
        read, self._reading = self._reading, None
        for path in (dumped, read):
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)


#: The JVM logs what class-data sharing skips (hundreds of lines when it dumps) on its standard output, which
#: is the command's (``keyshared check --json`` prints the verdict there): not at all.
_QUIET = "-Xlog:cds*=off"


def _fingerprint(java_options: str, memory: str) -> str:
    """A hash of what an archive matches: the java binary and its JVM library (path, size, time), pyspark's
    version and jars, the driver's options and memory."""
    import pyspark

    parts = [pyspark.__version__, str(Path(pyspark.__file__).parent / "jars"), java_options, memory, sys.platform]
    java = _java()
    if java is not None:
        home = java.parent.parent
        for path in (java, *sorted(home.glob("lib/server/libjvm.*"))):
            stat = path.stat()
            parts += [str(path), str(stat.st_size), str(stat.st_mtime_ns)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def _java() -> Path | None:
    """The java binary pyspark starts (``$JAVA_HOME/bin/java``, else the one on the PATH), resolved."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        return None
    return Path(os.path.realpath(found))
