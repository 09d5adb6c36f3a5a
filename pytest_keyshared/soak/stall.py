"""A broker that stops serving during a soak is a finding (``stalled``), not a harness failure.

Against a real broker that freezes (pulsar-lite does, under faults: it handles a Key_Shared subscribe and answers
nothing more), the soak sees two things: nothing is delivered any more, and the client calls it makes go
unanswered (a publish not confirmed within the send timeout, a subscribe timing out or its connection's
handshake unanswered); one of those may end the load with a failure (a consumer process's subscribe or close:
``ConsumerProcessError: Timeout`` or ``ConnectError``).  That is the
broker breaking its progress promise, not the harness breaking, when all of these hold:

* a client call went unanswered (timed out, as opposed to refused) after the last delivery, from a client no
  fault of the nemesis touched at the time (a stalled, delayed, partitioned or just-cut connection, a broker
  restart, explain a call that times out); the failure that ended the load may be that call;
* messages were owed: published, confirmed, and never delivered to anyone;
* no consumer received anything for at least :data:`MIN_SILENCE_S`, or for as long as a call waits (the
  client's operation timeout) where that is shorter;
* the broker still accepts TCP connections on its service port.  A broker that died or cannot be reached is a
  target failure (exit code 3), as before.

This is the progress promise of the ``delivery`` contract, the ``stalled`` kind that conformance cases judge for
an expired ``wait_received`` (``conformance/cases/_support.py``, ``progress_problems``).  The soak adds one
``stalled`` violation to the verdict of what was recorded, naming the window (from the last receive to the
judgement), what was owed and outstanding (how many, the oldest), which consumers were open and which clients
the nemesis faulted around the window; the run exits 1.  The soak judges at the end of its load (and when a
failure ends it): a freeze the broker recovered from before then is left to the other checks.

:class:`StallWatch` keeps what the judgement needs, from the recorded rows, in memory bounded by what is owed.
"""

from __future__ import annotations

import collections
import itertools
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from conformance.trace.rows import EXTRA, Row
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation, render_elle

__all__ = ["MIN_SILENCE_S", "Stall", "StallWatch", "broker_answers_tcp", "is_unanswered_call", "with_stall"]

#: The shortest silence (nothing delivered while messages are owed) that counts as a stall.
MIN_SILENCE_S = 5.0
#: Owed messages named in the violation (the oldest).
_NAMED = 5
#: Fault events and unanswered calls kept.
_KEEP = 256
#: The client name the nemesis gives the producers' connection.
_PRODUCERS = "producers"

#: ``(uid, publish event index, msg_id, key)``
Owed = tuple[str, int, "str | None", "str | None"]


@dataclass(frozen=True)
class Stall:
    """What the run saw of a broker that stopped serving (times in seconds since the load started)."""

    since_s: float  #: the last receive (or the load's start, if nothing was ever received)
    until_s: float  #: when it was judged (the end of the load, or the failure that ended it)
    last_receive: tuple[int, str | None, str | None] | None  #: ``(event index, consumer, msg_id)``
    owed: int  #: messages published ok and never delivered
    unacked: int  #: messages published ok and not acknowledged (the owed ones included)
    oldest: tuple[Owed, ...]  #: the oldest owed messages
    consumers: tuple[str, ...]  #: consumers open when it was judged
    faults: tuple[dict[str, Any], ...]  #: the nemesis's faults around the window (:func:`_faults_around`)
    unanswered: str  #: the call that went unanswered
    subscription: str | None = None

    @property
    def silent_s(self) -> float:
        return self.until_s - self.since_s

    def faulted(self, when: str) -> str:
        """The clients faulted ``when`` (``in effect``, ``during``, ``before``: :func:`_faults_around`)."""
        return ", ".join(dict.fromkeys(f["client"] for f in self.faults if f["when"] == when)) or "none"

    def sentence(self) -> str:
        """One line saying what happened, in words."""
        return (
            f"the broker stopped serving {self.since_s:.1f}s into the load: nothing delivered for {self.silent_s:.1f}s"
            f" while it owed {self.owed} messages, and {self.unanswered}; clients faulted when it stopped:"
            f" {self.faulted('in effect')}, during the silence: {self.faulted('during')}; judged as 'stalled'"
            " with what was recorded"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "since_s": round(self.since_s, 3),
            "until_s": round(self.until_s, 3),
            "silent_s": round(self.silent_s, 3),
            "last_receive": None if self.last_receive is None else self.last_receive[0],
            "owed": self.owed,
            "unacked": self.unacked,
            "oldest_owed": [
                {"uid": uid, "publish_event": i, "msg_id": msg_id, "key": key} for uid, i, msg_id, key in self.oldest
            ],
            "consumers": list(self.consumers),
            "faults": [dict(f) for f in self.faults],
            "unanswered": self.unanswered,
        }


class StallWatch:
    """A row listener (:meth:`observe`) keeping what :meth:`judge` needs: the messages owed (published ok, never
    delivered) with where they were published, the last receive, the client calls that went unanswered since
    then, and the last faults.  Times are the rows' ``t`` (the run's clock, ns)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owed: dict[str, tuple[int, str | None, str | None]] = {}  # uid -> (i, msg_id, key), oldest first
        self._early: set[str] = set()  # delivered before their publish receipt was recorded
        self.last_receive: tuple[int, str | None, str | None] | None = None
        self.last_receive_ns: int | None = None
        #: ``(i, t, what, client)`` of calls that went unanswered since the last receive
        self.unanswered: collections.deque[tuple[int, int, str, str]] = collections.deque(maxlen=_KEEP)
        self.faults: collections.deque[tuple[int, int, dict[str, Any]]] = collections.deque(maxlen=_KEEP)

    def observe(self, row: Row) -> None:
        op = row[2]
        with self._lock:
            if op == "receive":
                self.last_receive, self.last_receive_ns = (row[0], row[5], row[8]), row[1]
                self.unanswered.clear()
                uid = row[10]
                if uid is not None and self._owed.pop(uid, None) is None and not row[12] and len(self._early) < 100_000:
                    self._early.add(uid)  # a first delivery before its publish receipt was recorded
            elif op == "publish":
                uid, result = row[10], row[11] or "ok"
                if result == "ok" and uid is not None:
                    if uid in self._early:
                        self._early.discard(uid)
                    else:
                        self._owed[uid] = (row[0], row[8], row[7])
                elif result == "info":  # sent, never confirmed: the broker did not answer in time
                    self.unanswered.append((row[0], row[1], f"publish {uid} was not confirmed (E{row[0]})", _PRODUCERS))
            elif op == "open" and row[11] == "fail":
                error = str((row[EXTRA] or {}).get("error") or "")
                if any(kind in error for kind in (*_UNANSWERED, "TimeOut")):
                    self.unanswered.append((row[0], row[1], f"{row[5]}'s subscribe timed out (E{row[0]})", row[5]))
            elif op == "fault":
                self.faults.append((row[0], row[1], dict(row[EXTRA] or {})))

    def judge(
        self,
        failure: BaseException | None,
        *,
        service_url: str | None,
        started_ns: int,
        now_ns: int,
        unacked: int,
        consumers: list[str],
        subscription: str | None,
        call_timeout_s: float = MIN_SILENCE_S,
        failure_client: str = "",
    ) -> Stall | None:
        """The :class:`Stall` the run shows now, or None (see the module docstring).  ``failure``: what ended the
        load, if anything did, and ``failure_client`` the client whose call it was (a consumer's handle,
        ``producers``; empty if not known); ``call_timeout_s``: the client's operation timeout."""
        if service_url is None:
            return None
        with self._lock:
            owed = len(self._owed)
            oldest = [(uid, *where) for uid, where in itertools.islice(self._owed.items(), _NAMED)]
            last_receive, last_receive_ns = self.last_receive, self.last_receive_ns
            unanswered = list(self.unanswered)
            faults = [(i, (t - started_ns) / 1e9, extra) for i, t, extra in self.faults]
        since = 0.0 if last_receive_ns is None else (last_receive_ns - started_ns) / 1e9
        now = (now_ns - started_ns) / 1e9
        if owed <= 0 or now - since < min(MIN_SILENCE_S, call_timeout_s):
            return None
        evidence = None
        explained = _touched(failure_client, now, faults, call_timeout_s)  # a fault on its client explains it
        if failure is not None and is_unanswered_call(failure) and not explained:
            evidence = f"a client call went unanswered ({type(failure).__name__}: {failure})"
        for _i, t, what, client in unanswered:
            at = (t - started_ns) / 1e9
            if evidence is None and not _touched(client, at, faults, call_timeout_s):
                evidence = what
        if evidence is None or not broker_answers_tcp(service_url):
            return None
        return Stall(
            since_s=since,
            until_s=now,
            last_receive=last_receive,
            owed=owed,
            unacked=max(unacked, owed),
            oldest=tuple(oldest),
            consumers=tuple(sorted(consumers)),
            faults=tuple(_faults_around(faults, since, now)),
            unanswered=evidence,
            subscription=subscription,
        )


#: pulsar-client's errors for a call nobody answered in time: ``Timeout``, and ``ConnectError`` (the connection's
#: handshake unanswered within the connection timeout; with the port closed it is a broker that died, which the
#: port check tells apart).  A refusal (``ConsumerBusy``, ...) is an answer.
_UNANSWERED = ("Timeout", "ConnectError")


def is_unanswered_call(exc: BaseException) -> bool:
    """A client call the broker did not answer in time (in this process or in a consumer process), as opposed
    to a refusal or a harness error."""
    if getattr(exc, "kind", None) in _UNANSWERED:  # ConsumerProcessError: the pulsar exception's class name
        return True
    return type(exc).__name__ in _UNANSWERED and type(exc).__module__.split(".")[0] in ("pulsar", "_pulsar")


def broker_answers_tcp(service_url: str, timeout_s: float = 2.0) -> bool:
    """Whether the broker's service port still accepts a TCP connection (a process that died does not)."""
    from pytest_keyshared.targets._process import port_accepts

    parsed = urlparse(service_url)
    if parsed.hostname is None or parsed.port is None:
        return False
    return port_accepts(parsed.hostname, parsed.port, timeout_s)


def _restarting(faults: list[tuple[int, float, dict[str, Any]]], at: float, grace_s: float) -> bool:
    """Whether a broker restart was under way at ``at`` (or ended less than ``grace_s`` before)."""
    began: float | None = None
    for _i, t, extra in faults:
        if t > at:
            break
        name = extra.get("fault")
        if name == "broker_restart":
            began = t
        elif name == "broker_restarted" and began is not None:
            began = None if at - t > grace_s else began
    return began is not None


def _touched(client: str, at: float, faults: list[tuple[int, float, dict[str, Any]]], grace_s: float) -> bool:
    """Whether a fault explains a call of ``client`` unanswered at ``at``: a fault on its connection in effect
    then (or healed less than ``grace_s`` before: the client backs off before it reconnects), or a restart."""
    if _restarting(faults, at, grace_s):
        return True
    active: dict[str, float | None] = {}  # fault -> when it healed (None: not yet)
    for _i, t, extra in faults:
        if t > at:
            break
        if extra.get("client") != client:
            continue
        name = str(extra.get("fault", ""))
        if name.endswith("_heal"):
            active[name[: -len("_heal")]] = t
        elif not name.startswith("client_"):
            active[name] = t if name == "net_cut" else None
    return any(healed is None or at - healed <= grace_s for healed in active.values())


def _faults_around(faults: list[tuple[int, float, dict[str, Any]]], since: float, until: float) -> list[dict[str, Any]]:
    """The nemesis's faults (not the client's reconnect reports) around the silence, each
    ``{"client", "fault", "at_s", "healed_s", "event", "when"}``, ``when`` being ``in effect`` (injected before
    the silence began and not healed by then), ``during`` (injected in it) or ``before`` (the last one healed
    before it).  A cut is over once made (the client reconnects), so it is healed when injected."""
    injected: list[dict[str, Any]] = []
    for i, at, extra in faults:
        name = str(extra.get("fault", ""))
        client = extra.get("client")
        if client is None or name.startswith("client_"):
            continue
        if name.endswith("_heal"):
            for open_fault in reversed(injected):
                if open_fault["client"] == client and open_fault["fault"] == name[: -len("_heal")]:
                    if open_fault["healed_s"] is None:
                        open_fault["healed_s"] = round(at, 3)
                    break
            continue
        fault: dict[str, Any] = {"client": str(client), "fault": name, "at_s": round(at, 3), "event": i}
        fault["healed_s"] = fault["at_s"] if name == "net_cut" else None
        if "seconds" in extra:
            fault["seconds"] = extra["seconds"]
        injected.append(fault)
    out: list[dict[str, Any]] = []
    last_before: dict[str, Any] | None = None
    for f in injected:
        if f["at_s"] > until:
            continue
        if f["at_s"] >= since:
            out.append({**f, "when": "during"})
        elif f["healed_s"] is None or f["healed_s"] >= since:
            out.append({**f, "when": "in effect"})
        else:
            last_before = {**f, "when": "before"}
    return ([last_before] if last_before is not None else []) + out


def _describe_faults(faults: tuple[dict[str, Any], ...], when: str) -> str:
    def one(f: dict[str, Any]) -> str:
        if f["fault"] == "net_cut":
            return f"{f['client']} (net_cut at {f['at_s']:.1f}s)"
        healed = f"healed at {f['healed_s']:.1f}s" if f["healed_s"] is not None else "until it was judged"
        return f"{f['client']} ({f['fault']} at {f['at_s']:.1f}s, {healed})"

    return "; ".join(one(f) for f in faults if f["when"] == when) or "none"


def stall_violation(stall: Stall, end_i: int) -> Violation:
    """The ``stalled`` violation: witnesses the last receive and the ``end`` event (index ``end_i``)."""
    refs: list[tuple[int, str, str | None, str | None]] = []
    if stall.last_receive is not None:
        i, consumer, msg_id = stall.last_receive
        refs.append((i, "receive", consumer, msg_id))
    refs.append((end_i, "end", None, None))
    oldest = ", ".join(f"{msg_id or uid} (key {key!r}, published at E{i})" for uid, i, msg_id, key in stall.oldest)
    start = f"E{stall.last_receive[0]}, the last receive" if stall.last_receive is not None else "the load's start"
    then = [
        f"From {start} ({stall.since_s:.1f}s into the load) to {stall.until_s:.1f}s, {stall.silent_s:.1f}s, no"
        f" consumer received anything, though {len(stall.consumers)} consumer(s) were open"
        f" ({', '.join(stall.consumers) or 'none'}).",
        f"The broker owed {stall.owed} published messages it had never delivered (the oldest: {oldest});"
        f" {stall.unacked} were unacknowledged.",
        f"In that time {stall.unanswered}, from a client no fault touched; the broker's port still accepted"
        " connections: it was up, and it did not answer.",
        *(
            [
                f"The nemesis's faults in effect when delivery stopped: {_describe_faults(stall.faults, 'in effect')};"
                f" injected during the silence: {_describe_faults(stall.faults, 'during')}; the last one before"
                f" it: {_describe_faults(stall.faults, 'before')}."
            ]
            if stall.faults
            else []
        ),
        "However, a broker keeps delivering what it owes to consumers that can take it (the delivery contract's"
        " progress).",
    ]
    explanation = render_elle(
        f"stalled: the broker stopped delivering for {stall.silent_s:.1f}s while it owed {stall.owed} messages"
        f" (subscription {stall.subscription!r})",
        refs,
        then,
    )
    return Violation(
        kind=Kind.STALLED,
        key=None,
        consumers=stall.consumers,
        events=tuple(sorted({r[0] for r in refs})),
        explanation=explanation,
        subscription=stall.subscription,
        facts=stall.to_dict(),
    )


def with_stall(verdict: Verdict, stall: Stall, end_i: int) -> Verdict:
    """``verdict`` with the ``stalled`` violation added (validity decided again by the profile)."""
    return build_verdict(
        [*verdict.violations, *verdict.allowed, stall_violation(stall, end_i)],
        verdict.profile,
        events=verdict.events,
        notes=verdict.notes,
        unjudged=verdict.unjudged,
        engine=verdict.engine,
        crashed=verdict.crashed,
    )
