"""Unplanned client reconnects, read from the client library's log and recorded as ``fault`` events.

Why: the checkers assume a consumer's connection is not silently re-established.  When a connection drops,
the broker releases that consumer's unacknowledged messages and dispatches them again (to it once it is back,
or to another consumer); acknowledgements sent while it was away may be lost.  Without an event in the trace,
that looks like ``key_overlap`` or ``redelivered_after_ack``.  A ``fault`` releases the holds of the consumers
it names and disarms their earlier acknowledgements in the checkers (every consumer's, when it names none or
carries ``unattributed`` handlers), which is what a reconnect does.

The signal: the C++ client behind ``pulsar-client`` logs each handler (consumer or producer) whose connection
was lost and that will reconnect (``HandlerBase``: ``[topic, subscription, id] Schedule reconnection in 0.1 s``,
after ``ClientConnection``: ``[local -> remote] Connection disconnected``), and each handler that is back
(``[topic, subscription, id] Created consumer on broker [local -> remote]``, ``... Created producer on broker``).
A planned close (``close()`` of a consumer, producer or client) closes the handler first, so the client
schedules no reconnection and nothing is recorded; a killed consumer process writes nothing at all.  Every
line is flushed as it is written (``SimpleLogger``), and a handler logs its loss before it reconnects, so a
message that arrives over the new connection is received after its loss line is in the file.

Two events per loss, each naming the connection and the run's consumers (handles) and producers on it:
``fault: client_reconnect`` when the loss is read, and ``fault: client_reconnected`` when the handler is back
(acknowledgements made while it was away may not have reached the broker).  The log is read before every
``receive`` is recorded (so the faults come before any delivery over the new connection), whenever the run loop
waits, and once before ``end``.

Where the lines are: the client library's logger is process-wide (the first one set stays), so every client
of the driver's process writes one file (``pulsar_client.process_client_log()``) across runs; a run reads it
from where it stood when the run began, and copies what it reads into ``<run>/pulsar-client.log``.  Consumer
processes (crashable consumers) write ``<run>/consumer-processes.log``, read as a second source.

Which handle a line is about: a consumer's label (``[topic, subscription, consumer id]``) repeats across
clients, so the watch follows connections.  When a consumer is opened, the ``Created consumer on broker
[local -> remote]`` line written while ``subscribe`` ran (membership changes are issued one at a time) names
its connection; a loss names the connection that went (``[local -> remote] Connection disconnected``, then the
handlers on it, logged together by the thread that closed it); the handler's next ``Created consumer`` line on
that client's thread names the new connection.  (Threads alone do not do: the first creation is sometimes
logged by the thread that called ``subscribe``.)  When no creation line shows up (other code in the process
installed the client's logger first, say) the run notes that its reconnects are recorded without the
consumer's name, or not at all.

Lines can be mangled.  The C++ client's file logger shares one ``std::ofstream`` between all threads of the
process without a lock (``FileLoggerFactoryImpl``, ``SimpleLogger``), and a broker restart makes every client
log at once: lines then come out interleaved mid-line, duplicated, or lost.  So the reader splits a line
wherever another line's start (``TIME LEVEL [thread]``) appears inside it, and a restoration need not come from
the log: when a handler's loss was recorded and its client says it is connected again (``is_connected()``, the
watch's ``probe``), the watch records ``client_reconnected`` with ``inferred_from: "is_connected"`` and no
connection.  It asks before recording any receive of a lost consumer, and whenever the driver reconciles (after
a send, after a broker restart), so the restoration still comes before any delivery over the new connection.
A loss whose every line was lost stays unrecorded; a broker restart the harness caused is a fault of its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = [
    "ClientLogLine",
    "ClientLogWatch",
    "ConnectionEvent",
    "Handler",
    "LogSource",
    "Probe",
    "ReconnectTracker",
    "parse_handler",
    "parse_line",
    "split_interleaved",
]

LOST = "client_reconnect"
RESTORED = "client_reconnected"

_TIME = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,]\d+"
_LINE = re.compile(
    rf"^(?P<time>{_TIME})\s+(?P<level>[A-Z]+)\s+\[(?P<thread>[^\]]+)\]\s+(?P<source>[^|]*?)\s*\|\s(?P<text>.*)$"
)
#: Where a log line starts: a line that holds one of these past its start is two lines written at once.
_LINE_START = re.compile(rf"{_TIME}\s+[A-Z]+\s+\[")
_DISCONNECTED = re.compile(r"^\[(?P<conn>[^\]]+)\] Connection disconnected")
_SCHEDULED = re.compile(r"^\[(?P<label>[^\]]+)\] Schedule reconnection")
_CREATED = re.compile(r"^\[(?P<label>[^\]]+)\] Created (?P<role>consumer|producer) on broker \[(?P<conn>[^\]]+)\]")


@dataclass(frozen=True, slots=True)
class ClientLogLine:
    """One line of the C++ client's log: ``TIME LEVEL [thread] File:line | text``."""

    time: str
    level: str
    thread: str
    source: str
    text: str


def parse_line(line: str) -> ClientLogLine | None:
    """The parts of a client log line; None for anything else (a consumer process's stray output, say)."""
    match = _LINE.match(line.rstrip("\r\n"))
    if match is None:
        return None
    return ClientLogLine(match["time"], match["level"], match["thread"], match["source"], match["text"].rstrip())


def split_interleaved(raw: str) -> list[str]:
    """``raw`` cut wherever a log line starts inside it: the unlocked C++ logger sometimes writes one line into
    the middle of another.  The head before the first start (a torn fragment) is kept; the parser ignores it."""
    starts = [m.start() for m in _LINE_START.finditer(raw)]
    if not starts or starts == [0]:
        return [raw]
    if starts[0] != 0:
        starts.insert(0, 0)
    return [raw[a:b] for a, b in zip(starts, [*starts[1:], len(raw)], strict=True)]


@dataclass(frozen=True, slots=True)
class Handler:
    """A consumer (``[topic, subscription, id]``) or producer (``[topic, name]``) as the client names it."""

    label: str
    topic: str
    role: str  #: ``consumer`` or ``producer``
    subscription: str | None = None
    consumer_id: int | None = None
    producer: str | None = None


def parse_handler(label: str) -> Handler | None:
    """``"t, sub, 3"`` -> a consumer handler, ``"t, p1"`` -> a producer handler; None otherwise."""
    parts = [p.strip() for p in label.split(", ")]
    if len(parts) == 3 and parts[2].lstrip("-").isdigit():
        return Handler(label, parts[0], "consumer", subscription=parts[1], consumer_id=int(parts[2]))
    if len(parts) == 2 and parts[0]:
        return Handler(label, parts[0], "producer", producer=parts[1])
    return None


@dataclass(frozen=True, slots=True)
class ConnectionEvent:
    """Handlers of one client whose connection was lost (``lost``) or re-established (``restored``)."""

    kind: str  #: ``lost`` or ``restored``
    thread: str
    connection: str | None  #: ``local -> remote``: the lost connection, or the new one
    handlers: tuple[Handler, ...]
    time: str  #: the client log's time of the first line of the group


@dataclass(frozen=True, slots=True)
class Creation:
    """A handler that (re)connected: who, on which client thread, over which connection."""

    thread: str
    handler: Handler
    connection: str


@dataclass
class ReconnectTracker:
    """Pure: turns client log lines into connection losses and restorations, per (thread, handler label).

    A handler is *lost* from its first ``Schedule reconnection`` line until its ``Created ... on broker`` line;
    repeated scheduling while it is lost (failed attempts) adds nothing.  Losses (and restorations) of one client
    thread in one batch of lines form one event, with the connection last seen disconnecting on that thread.
    """

    lost: dict[tuple[str, str], str] = field(default_factory=dict)  #: (thread, label) -> time lost
    last_disconnect: dict[str, str] = field(default_factory=dict)  #: thread -> "local -> remote"
    creations: list[Creation] = field(default_factory=list)  #: every creation seen (drained by the caller)

    def feed(self, lines: Iterable[str]) -> list[ConnectionEvent]:
        groups: dict[tuple[str, str, str | None], list[Handler]] = {}
        times: dict[tuple[str, str, str | None], str] = {}
        for line in self._lines(lines):
            if (m := _DISCONNECTED.match(line.text)) is not None:
                if not m["conn"].startswith("<none>"):  # a failed connection attempt, not a lost connection
                    self.last_disconnect[line.thread] = m["conn"]
            elif (m := _SCHEDULED.match(line.text)) is not None:
                handler = parse_handler(m["label"])
                key = (line.thread, m["label"])
                if handler is None or key in self.lost:
                    continue
                self.lost[key] = line.time
                group = ("lost", line.thread, self.last_disconnect.get(line.thread))
                groups.setdefault(group, []).append(handler)
                times.setdefault(group, line.time)
            elif (m := _CREATED.match(line.text)) is not None:
                handler = parse_handler(m["label"])
                if handler is None:
                    continue
                self.last_disconnect.pop(line.thread, None)  # that loss is over on this thread
                self.creations.append(Creation(line.thread, handler, m["conn"]))
                if self.lost.pop((line.thread, m["label"]), None) is not None:
                    group = ("restored", line.thread, m["conn"])
                    groups.setdefault(group, []).append(handler)
                    times.setdefault(group, line.time)
        return [
            ConnectionEvent(kind, thread, conn, tuple(handlers), times[(kind, thread, conn)])
            for (kind, thread, conn), handlers in groups.items()
        ]

    @staticmethod
    def _lines(raws: Iterable[str]) -> Iterator[ClientLogLine]:
        for raw in raws:
            for piece in split_interleaved(raw):
                line = parse_line(piece)
                if line is not None:
                    yield line

    def restored_elsewhere(self, thread: str, label: str) -> None:
        """The handler (``thread``, ``label``) is known to be back without its log line: it is no longer lost."""
        self.lost.pop((thread, label), None)


@dataclass
class LogSource:
    """One log file the watch follows, from ``offset``; what it reads is appended to ``tee`` when given."""

    path: Path
    offset: int = 0
    tee: Path | None = None
    tracker: ReconnectTracker = field(default_factory=ReconnectTracker)
    partial: bytes = b""

    @classmethod
    def from_now(cls, path: Path, *, tee: Path | None = None) -> LogSource:
        """Follow ``path`` from its current end (what earlier runs of the process wrote is not ours)."""
        try:
            offset = os.stat(path).st_size
        except OSError:
            offset = 0
        return cls(path, offset, tee)

    #: the file, kept open from ``offset`` on: a look that finds nothing new is one ``read`` (the watch looks
    #: before every receive and after every send, so a ``stat`` and an ``open`` each time would add up)
    handle: IO[bytes] | None = field(default=None, repr=False, compare=False)

    def read_lines(self, chunk_bytes: int) -> list[str]:
        fh = self.handle
        if fh is None:
            try:
                fh = self.path.open("rb")
            except OSError:
                return []  # not written yet (no consumer process so far)
            fh.seek(self.offset)
            self.handle = fh
        try:
            data = fh.read(chunk_bytes)
        except OSError:
            return []
        if not data:
            return []
        self.offset += len(data)
        if self.tee is not None:
            with contextlib.suppress(OSError), self.tee.open("ab") as out:
                out.write(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        return [line.decode("utf-8", "replace") for line in complete]

    def has_news(self) -> bool:
        """Whether the file holds bytes past ``offset``: one ``pread`` of a byte, no lock, nothing consumed (True
        when it cannot tell, or the file is not open yet: then :meth:`read_lines` looks)."""
        fh = self.handle
        if fh is None:
            return True
        try:
            return bool(os.pread(fh.fileno(), 1, self.offset))
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        fh, self.handle = self.handle, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()


#: Asks a client whether a handler is connected now: (``"consumer"``, handle) or (``"producer"``, name) -> True,
#: False, or None when it cannot tell (a handle it does not know, a client without ``is_connected``).
Probe = Callable[[str, str], bool | None]


class ClientLogWatch:
    """Follows the client logs of a run and records each unplanned reconnect as ``fault`` events.

    ``poll()`` is cheap when nothing was written (one ``stat`` per source) and safe from any thread; faults
    are recorded under the watch's lock, so a receive recorded after a ``poll()`` comes after the faults that
    poll found.  ``opening(handle)`` brackets a subscribe, to learn which (source, connection, label) is that
    consumer.  ``reconcile()`` and ``before_receive(handle)`` ask the ``probe`` about handlers still lost, for
    restorations the log did not show.  ``stop()`` ends the recording (before ``end``); ``close()`` copies what
    is left to the tees.
    """

    def __init__(
        self,
        sources: Path | LogSource | list[LogSource],
        recorder: Any,
        topic: str,
        *,
        chunk_bytes: int = 1 << 20,
        probe: Probe | None = None,
    ) -> None:
        if isinstance(sources, Path):
            sources = [LogSource(sources)]
        elif isinstance(sources, LogSource):
            sources = [sources]
        self.sources = list(sources)
        self.recorder = recorder
        self.topic = topic
        self.chunk_bytes = chunk_bytes
        self.probe = probe
        self.notes: list[str] = []
        self.faults = 0
        self._lock = threading.Lock()
        self._bound: dict[tuple[int, str, str], str] = {}  # (source, connection, consumer label) -> handle
        self._lost_as: dict[tuple[int, str, str], str] = {}  # (source, thread, consumer label) -> handle, while lost
        self._closed: set[str] = set()
        self._opening: str | None = None
        self._found: list[tuple[int, str, str]] = []
        self._stopped = False

    def add_source(self, source: LogSource) -> None:
        """Follow one more log from now on (sources keep their place: bindings name them by index)."""
        with self._lock:
            self.sources.append(source)

    def poll(self) -> int:
        """Read what the clients wrote since the last poll; record its faults.  Returns how many were recorded."""
        if self._quiet():
            return 0
        with self._lock:
            if self._stopped:
                return 0
            recorded = 0
            for index, source in enumerate(self.sources):
                while lines := source.read_lines(self.chunk_bytes):
                    recorded += self._process(index, source, lines)
            return recorded

    def _quiet(self) -> bool:
        """True when no log has unread bytes and no poll is under way: the common case, told without the lock (the
        watch looks before every receive and after every send, from every client thread at once).

        A poll under way may have read lines it has not recorded yet, and a receive must come after them, so the
        lock is looked at after the files: a poll that read past our offsets before we looked still holds it.
        """
        for source in self.sources:
            if source.has_news():
                return False
        return not self._lock.locked()

    def _process(self, index: int, source: LogSource, lines: list[str]) -> int:
        events = source.tracker.feed(lines)
        creations, source.tracker.creations = source.tracker.creations, []
        if self._opening is not None:
            for creation in creations:
                handler = creation.handler
                if handler.role != "consumer" or handler.topic != self.topic:
                    continue
                key = (index, creation.connection, handler.label)
                owner = self._bound.get(key)
                if owner is None or owner in self._closed:
                    self._found.append(key)
        recorded = 0
        for event in events:
            consumers, producers, unknown = self._names(index, event)
            if not consumers and not producers and not unknown:
                continue  # only handlers of other topics (the throwaway id-spacing consumers)
            self.recorder.fault(
                LOST if event.kind == "lost" else RESTORED,
                connection=event.connection,
                consumers=consumers or None,
                producers=producers or None,
                unattributed=unknown or None,
                client_log_time=event.time,
            )
            recorded += 1
        self.faults += recorded
        return recorded

    def _names(self, index: int, event: ConnectionEvent) -> tuple[list[str], list[str], list[str]]:
        """The run's consumer handles and producer names among ``event``'s handlers (bindings follow the event)."""
        consumers: list[str] = []
        producers: list[str] = []
        unknown: list[str] = []
        for handler in event.handlers:
            if handler.topic != self.topic:
                continue
            if handler.role == "producer" and handler.producer:
                producers.append(handler.producer)
                continue
            handle = self._consumer_of(index, event, handler.label)
            if handle is not None:
                consumers.append(handle)
            else:
                unknown.append(handler.label)
        return sorted(set(consumers)), sorted(set(producers)), sorted(set(unknown))

    def _consumer_of(self, index: int, event: ConnectionEvent, label: str) -> str | None:
        lost_key = (index, event.thread, label)
        if event.kind == "restored":
            handle = self._lost_as.pop(lost_key, None)
            if handle is not None and event.connection is not None:
                self._bound = {k: v for k, v in self._bound.items() if v != handle}
                self._bound[(index, event.connection, label)] = handle
            return handle
        handle = self._bound.get((index, event.connection, label)) if event.connection else None
        if handle is None:  # no connection named (a broker-initiated close): the label may still be unique
            live = {
                v for (i, _, lbl), v in self._bound.items() if i == index and lbl == label and v not in self._closed
            }
            handle = next(iter(live)) if len(live) == 1 else None
        if handle is not None:
            self._lost_as[lost_key] = handle
        return handle

    # --- restorations the log did not show ---------------------------------------------------------------

    def lost(self) -> tuple[list[str], list[str]]:
        """The run's consumers and producers whose loss was recorded and whose return was not (yet)."""
        with self._lock:
            return sorted(set(self._lost_as.values())), sorted(self._lost_producers())

    def _lost_producers(self) -> dict[str, list[tuple[int, str, str]]]:
        found: dict[str, list[tuple[int, str, str]]] = {}
        for index, source in enumerate(self.sources):
            for thread, label in source.tracker.lost:
                handler = parse_handler(label)
                if handler is not None and handler.role == "producer" and handler.topic == self.topic:
                    found.setdefault(handler.producer or "", []).append((index, thread, label))
        return found

    def before_receive(self, handle: str) -> int:
        """Read the log, then, if ``handle`` is still lost, ask its client: a receive must follow its return."""
        recorded = self.poll()
        if not self._lost_as:  # nothing lost (the common case): no lock to take
            return recorded
        with self._lock:
            if self._stopped or self.probe is None or handle not in self._lost_as.values():
                return recorded
        return recorded + self._confirm([handle], [])

    def reconcile(self) -> int:
        """Read the log, then ask the clients of every handler still lost; record the ones that are back."""
        recorded = self.poll()
        if self.probe is None or not (self._lost_as or any(source.tracker.lost for source in self.sources)):
            return recorded  # nothing lost (the common case, after every send): nothing to ask
        consumers, producers = self.lost()
        if not consumers and not producers:
            return recorded
        return recorded + self._confirm(consumers, producers)

    def _confirm(self, consumers: list[str], producers: list[str]) -> int:
        assert self.probe is not None
        # outside the lock: a probe may be a round trip to a consumer process
        back_consumers = [h for h in consumers if self.probe("consumer", h)]
        back_producers = [p for p in producers if self.probe("producer", p)]
        if not back_consumers and not back_producers:
            return 0
        with self._lock:
            if self._stopped:
                return 0
            named: list[str] = []
            for handle in back_consumers:
                keys = [k for k, v in self._lost_as.items() if v == handle]
                for index, thread, label in keys:
                    del self._lost_as[(index, thread, label)]
                    self.sources[index].tracker.restored_elsewhere(thread, label)
                if keys:
                    named.append(handle)
            lost_producers = self._lost_producers()
            named_producers: list[str] = []
            for name in back_producers:
                for index, thread, label in lost_producers.get(name, []):
                    self.sources[index].tracker.restored_elsewhere(thread, label)
                    named_producers.append(name)
            if not named and not named_producers:
                return 0  # the log showed them back meanwhile
            self.recorder.fault(
                RESTORED,
                consumers=sorted(set(named)) or None,
                producers=sorted(set(named_producers)) or None,
                inferred_from="is_connected",
            )
            self.faults += 1
            return 1

    # --- consumers' identities --------------------------------------------------------------------------

    @contextlib.contextmanager
    def opening(self, handle: str) -> Iterator[None]:
        """Bracket the subscribe of consumer ``handle``: its ``Created consumer`` line names its connection."""
        self.poll()
        with self._lock:
            self._opening, self._found = handle, []
        opened = False
        try:
            yield
            opened = True
        finally:
            self.poll()
            with self._lock:
                found, self._opening, self._found = self._found, None, []
                if opened:
                    self._closed.discard(handle)
                    for key in found:
                        self._bound[key] = handle
                    if not found and not self._stopped:
                        self.notes.append(
                            f"the client log shows no creation of consumer {handle!r} on {self.topic}: its"
                            " reconnects are recorded without its name, or not at all (does other code in this"
                            " process install the pulsar-client logger?)"
                        )

    def closed(self, handle: str) -> None:
        """``handle`` was closed or crashed on purpose: it is on no connection any more."""
        self.poll()
        with self._lock:
            self._closed.add(handle)
            self._bound = {k: v for k, v in self._bound.items() if v != handle}
            self._lost_as = {k: v for k, v in self._lost_as.items() if v != handle}

    def stop(self) -> None:
        """A last read, then nothing more is recorded (teardown closes clients after ``end``)."""
        self.poll()
        with self._lock:
            self._stopped = True

    def close(self) -> None:
        """Copy what the clients wrote since (teardown) to the tees, without recording anything."""
        with self._lock:
            self._stopped = True
            for source in self.sources:
                while source.read_lines(self.chunk_bytes):
                    pass
                source.close()
