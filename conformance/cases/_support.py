"""Shared by the case modules: scenario files of an area, turned into parametrized pytest cases.

A case scenario's ``tags`` carry its metadata: ``contract:<name>`` marks the contracts it checks,
``requires:<capability>`` what the target must support, ``judge:<profile>`` the contract profile the trace
is judged under whatever the target claims (a known bug fixed by PIP-379 is judged by the PIP-379 contract,
even on a classic broker), ``model-release:<version>[:<implementation>]`` a release of the reference model the case
also runs at when the target is the model (:func:`model_releases_of`).  Each becomes a ``pytest.param`` with the
matching ``keyshared_contract`` / ``keyshared_requires`` markers and the scenario name as id, so the case id is
``<area>/<scenario name>``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from conformance.cases._permits import received_beyond_permits
from conformance.cases._snapshot_metrics import snapshot_metrics_problems
from conformance.scenarios import Open, Scenario, loads_scenario, parse_scenario
from conformance.scenarios.model import InvalidScenario, WaitQuiet
from conformance.trace.events import MsgId
from conformance.violations import Kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "CONTRACT_TAG",
    "JUDGE_TAG",
    "MODEL_RELEASE_TAG",
    "NO_OWNER",
    "REQUIRES_TAG",
    "PinnedCase",
    "area_scenarios",
    "batch_size_problems",
    "case_params",
    "case_problems",
    "client_view_problems",
    "contracts_of",
    "deliveries_outside_sticky_ranges",
    "early_batch_problems",
    "event_time_problems",
    "model_releases_of",
    "pinned_cases",
    "pinned_mismatches",
    "profile_of",
    "progress_problems",
    "redeliveries_out_of_order",
    "requires_of",
    "run_case",
]

CONTRACT_TAG = "contract:"
REQUIRES_TAG = "requires:"
JUDGE_TAG = "judge:"
MODEL_RELEASE_TAG = "model-release:"


def area_scenarios(area: str) -> list[Scenario]:
    """Every scenario file of ``conformance/cases/scenarios/<area>/``, sorted by name."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text(encoding="utf-8")
            out.append(loads_scenario(text, "toml", source=f"conformance/cases/scenarios/{area}/{entry.name}"))
    return out


#: The owner a pinned table gives a key that no consumer may receive (a STICKY gap).
NO_OWNER = "none"


@dataclass(frozen=True)
class PinnedCase:
    """A scenario with its own expected key placement: ``owners`` maps a key to a consumer handle or ``none``."""

    scenario: Scenario
    owners: Mapping[str, str]
    source: str  #: where the table comes from (a Pulsar unit test, or the rule it was computed with)
    implementation: str = ""  #: the dispatcher the table is for (``pip379``: the classic one reduces hashes apart)
    applies_from: tuple[str, ...] = ()  #: first release of each line the table holds for (``Fix`` semantics)

    def not_applicable(self, claimed_version: str, claimed_implementation: str) -> str | None:
        """Why the table does not describe a broker claiming this version and implementation (``None``: it does)."""
        from reference_model.versions import Fix, parse_version

        if self.implementation and claimed_implementation != self.implementation:
            return (
                f"the pinned table is the {self.implementation} dispatcher's placement; the target claims"
                f" {claimed_implementation}"
            )
        if self.applies_from and not Fix("pinned", "", self.applies_from).present_in(parse_version(claimed_version)):
            return (
                f"the pinned table holds from Pulsar {', '.join(self.applies_from)}; the target claims"
                f" {claimed_version}"
            )
        return None


def pinned_cases(area: str) -> list[PinnedCase]:
    """Every scenario file of ``scenarios/<area>/`` with its ``[pinned]`` table (``source``, ``owners``)."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".toml"):
            continue
        where = f"conformance/cases/scenarios/{area}/{entry.name}"
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        pinned = data.pop("pinned", None)
        if not isinstance(pinned, dict) or not isinstance(pinned.get("owners"), dict) or not pinned["owners"]:
            raise InvalidScenario(f"{where}: needs a [pinned.owners] table (key = consumer handle or 'none').")
        scenario = parse_scenario(data, source=where)
        handles = set(scenario.consumers())
        owners = {str(k): str(v) for k, v in pinned["owners"].items()}
        for key, owner in owners.items():
            if owner != NO_OWNER and owner not in handles:
                raise InvalidScenario(f"{where}: [pinned.owners] gives {key!r} to {owner!r}, which no step opens.")
        applies = pinned.get("applies_from", [])
        if not isinstance(applies, list) or not all(isinstance(v, str) for v in applies):
            raise InvalidScenario(f'{where}: [pinned] applies_from must be a list of versions, e.g. ["4.0.7"].')
        out.append(
            PinnedCase(
                scenario,
                owners,
                str(pinned.get("source", "")),
                str(pinned.get("implementation", "")),
                tuple(applies),
            )
        )
    return out


def pinned_mismatches(trace_path: str | Path, owners: Mapping[str, str], source: str = "") -> list[str]:
    """One explanation per receive of a pinned key by another consumer than its pinned owner, and per pinned
    key its owner never received.

    Every receive counts, redeliveries included: the cases keep the membership fixed while keys flow, so a key
    has one owner for the whole run.  A key pinned to ``none`` must not be received at all; any other pinned
    key must reach its owner (the cases publish every pinned key).
    """
    from conformance.trace.reader import open_trace

    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    published: set[str] = set()
    for event in open_trace(trace_path).events():  # any trace form: JSON Lines, gzip, Parquet
        op = event.op.value
        if op == "publish" and event.result is not None and event.result.value == "ok":
            published.add(str(event.key))
        if op != "receive":
            continue
        key, consumer = event.key, event.consumer
        if key is None or consumer is None:
            continue
        if consumer == owners.get(key):
            seen.add((key, consumer))
        want = owners.get(key)
        if want is None or consumer == want or (key, consumer) in seen:
            continue
        seen.add((key, consumer))
        expected = "no consumer (its hash is in no consumer's range)" if want == NO_OWNER else f"consumer {want}"
        problems.append(
            f"pinned_owner: key {key!r} was received by consumer {consumer} (E{event.i},"
            f" {event.msg_id}), but belongs to {expected}" + (f" ({source})" if source else "")
        )
    for key, owner in owners.items():
        if owner != NO_OWNER and key in published and (key, owner) not in seen:
            problems.append(
                f"pinned_owner: key {key!r} was published but never received by its owner, consumer {owner}"
                + (f" ({source})" if source else "")
            )
    return problems


def progress_problems(result: Any, scenario: Scenario | None = None) -> list[tuple[str, Kind, str]]:
    """``(contract, kind, explanation)`` for each bounded wait of a run that the broker made expire.

    * ``stalled`` (``delivery``): a ``wait_received`` step timed out.  A case waits for a count the broker
      owes that consumer, so an expired wait is a broken promise of progress (a healthy consumer owning other
      keys must keep receiving while another consumer is stuck).  So does a ``wait_delivered`` step (messages
      neither acknowledged nor held by an open consumer were left undelivered for its whole bound).
    * ``not_quiet`` (``redelivery``): a ``wait_quiet`` step *with its own* ``timeout_ms`` timed out: the case
      promises the subscription settles within that bound (a consumer that nacks a message a fixed number of
      times and then acknowledges it); a broker that keeps redelivering breaks it.  A ``wait_quiet`` without
      ``timeout_ms`` is only a pause, and its expiry is no finding.
    """
    steps = scenario.steps if scenario is not None else ()
    out: list[tuple[str, Kind, str]] = []
    for step in result.steps:
        if step.ok:
            continue
        planned = steps[step.index - 1] if 0 < step.index <= len(steps) else None
        if step.do in ("wait_received", "wait_delivered"):
            out.append(("delivery", Kind.STALLED, f"stalled: step {step.index} ({step.do}): {step.note}"))
        elif step.do == "wait_quiet" and isinstance(planned, WaitQuiet) and planned.timeout_ms is not None:
            out.append(("redelivery", Kind.NOT_QUIET, f"not_quiet: step {step.index} (wait_quiet): {step.note}"))
    return out


def contracts_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(CONTRACT_TAG) :] for t in scenario.tags if t.startswith(CONTRACT_TAG))


def profile_of(scenario: Scenario) -> str | None:
    """The profile a ``judge:<profile>`` tag names, or None (the profile follows the target's claim)."""
    named = [t[len(JUDGE_TAG) :] for t in scenario.tags if t.startswith(JUDGE_TAG)]
    return named[0] if named else None


def model_releases_of(scenario: Scenario) -> tuple[str, ...]:
    """The model targets (``model:4.0.13``, ``model:3.2:classic``) a ``model-release:`` tag names.

    A workload whose broker behaviour differs only on releases the model targets of a run do not claim (the mutation
    run's targets are each line's newest patch) runs there too, on the same model target with every other option
    kept, and is judged the same way: on the model, a case can take the dispatch code of an older release without a
    target of its own.  A real broker is what it is: the tag changes nothing there.
    """
    return tuple(f"model:{t[len(MODEL_RELEASE_TAG) :]}" for t in scenario.tags if t.startswith(MODEL_RELEASE_TAG))


def requires_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(REQUIRES_TAG) :] for t in scenario.tags if t.startswith(REQUIRES_TAG))


def case_params(
    scenarios: Iterable[Scenario],
    *,
    contracts: Mapping[str, tuple[str, ...]] | None = None,
    requires: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Any]:
    """``pytest.param(scenario, id=name, marks=[...])`` per scenario; ``contracts``/``requires`` add to the tags."""
    params = []
    for scenario in scenarios:
        marks = []
        declared = (contracts or {}).get(scenario.name, ()) or contracts_of(scenario)
        if declared:
            marks.append(pytest.mark.keyshared_contract(*declared))
        needs = (*requires_of(scenario), *(requires or {}).get(scenario.name, ()))
        if needs:
            marks.append(pytest.mark.keyshared_requires(*needs))
        params.append(pytest.param(scenario, id=scenario.name, marks=marks))
    return params


def deliveries_in_shared_published_ranges(trace_path: str | Path) -> list[str]:
    """Explanations of every message delivered, after the last membership change, to a consumer while the broker's
    own topic stats give its hash to another consumer as well.

    Judged only when the run recorded the stats (the ``end`` event's ``key_hash_ranges``, which a scenario asks for
    with the ``record:key-hash-ranges`` tag) and the trace header names a selector (for the hash of a key, in the
    stats' hash space).  Stats that leave a hash to nobody are not judged (3.x ring stats omit the wrap-around
    range, apache/pulsar#23321); a hash published for two consumers is (``consumer1`` and ``consumer11`` sharing
    ring points before apache/pulsar#22053).
    """
    from conformance.checks.assignment import selector_factory
    from conformance.trace.reader import open_trace
    from reference_model.errors import KeySharedError

    trace = open_trace(trace_path)
    header = trace.header
    if header.selector is None:
        return []
    try:
        selector = selector_factory(header.selector, header.implementation == "classic")()
    except KeySharedError:
        return []
    names: dict[str, str] = {}
    receives: list[tuple[int, str, str, str]] = []
    published: dict[str, list[tuple[int, int]]] | None = None
    for event in trace.events():
        if event.op in ("open", "close", "crash"):
            receives.clear()  # judge only the membership the stats describe: the last one
            if event.op == "open" and event.result in (None, "ok"):
                names[str(event.consumer)] = str(event.extra.get("name") or event.consumer)
        elif event.op == "receive" and event.key is not None:
            receives.append((event.i, str(event.consumer), str(event.msg_id), event.key))
        elif event.op == "end":
            raw = event.extra.get("key_hash_ranges")
            if isinstance(raw, dict):
                published = {str(n): [(int(a), int(b)) for a, b in r] for n, r in raw.items()}
    if not published:
        return []
    problems: list[str] = []
    for i, handle, msg_id, key in receives:
        name = names.get(handle, handle)
        slot = selector.slot_of(key.encode("utf-8"))
        others = sorted(n for n, r in published.items() if n != name and any(a <= slot <= b for a, b in r))
        if others and any(a <= slot <= b for a, b in published.get(name, ())):
            problems.append(
                f"misassigned: consumer {handle} ({name}) received {msg_id} (key {key!r}, hash {slot}) at E{i}, but"
                f" the broker's stats give that hash to {', '.join(others)} as well"
            )
    return problems


#: ``PositionImpl.toString()``: how Pulsar's stats print a position (``ledgerId:entryId``).
_POSITION_TEXT = re.compile(r"-?[0-9]+:-?[0-9]+")
#: The draining figures Pulsar's ``PersistentSubscription.getStats`` adds up over the subscription's consumers.
_DRAINING_SUMS = ("drainingHashesCount", "drainingHashesClearedTotal", "drainingHashesUnackedMessages")


def stats_figure_problems(figures: Mapping[str, Any]) -> list[str]:
    """Explanations of every way one subscription's stats (as :func:`~pytest_keyshared.driver.session.
    stats_subscription_figures` keeps them) contradict themselves.

    Sound on any one stats document, whenever it was read: Apache Pulsar computes each subscription figure from
    the consumers' in the same call (``PersistentSubscription.getStats`` adds every consumer's
    ``drainingHashesCount``, ``drainingHashesClearedTotal`` and ``drainingHashesUnackedMessages`` into the
    subscription's, 4.0 on), prints positions as ``ledgerId:entryId`` (``readPositionWhenJoining``, the values
    of the classic ``consumersAfterMarkDeletePosition``), and removes a consumer from the recently-joined map
    when it leaves (so that map names only connected consumers).  No timing enters: the acks in flight, equal
    timestamps and late acks change the figures, never their agreement.
    """
    problems: list[str] = []
    consumers = [c for c in figures.get("consumers") or () if isinstance(c, Mapping)]
    for name in _DRAINING_SUMS:
        total = figures.get(name)
        if not isinstance(total, int):
            continue
        parts = [c.get(name) for c in consumers]
        summed = sum(v for v in parts if isinstance(v, int))
        if total != summed:
            shown = ", ".join(f"{c.get('consumerName')}: {c.get(name, 0)}" for c in consumers) or "no consumers"
            problems.append(
                f"stats_mismatch: the subscription's {name} is {total}, but its consumers' add up to {summed}"
                f" ({shown}); Pulsar's subscription stats are the sum of its consumers'"
            )
    for consumer in consumers:
        position = consumer.get("readPositionWhenJoining")
        if isinstance(position, str) and not _POSITION_TEXT.fullmatch(position):
            problems.append(
                f"stats_mismatch: consumer {consumer.get('consumerName')!r} has readPositionWhenJoining"
                f" {position!r}, not a position (ledgerId:entryId)"
            )
    joined = figures.get("consumersAfterMarkDeletePosition")
    if isinstance(joined, Mapping):
        names = {str(c.get("consumerName")) for c in consumers}
        for name, position in sorted(joined.items()):
            if not isinstance(position, str) or not _POSITION_TEXT.fullmatch(position):
                problems.append(
                    f"stats_mismatch: consumersAfterMarkDeletePosition gives {name!r} the position {position!r},"
                    " not a position (ledgerId:entryId)"
                )
            if consumers and str(name) not in names:
                problems.append(
                    f"stats_mismatch: consumersAfterMarkDeletePosition names {name!r}, which is not among the"
                    f" subscription's consumers ({', '.join(sorted(names))}): a consumer leaves that map when it leaves"
                )
    return problems


def consumer_counter_problems(
    figures: Mapping[str, Any],
    limit: int | None,
    received: Mapping[str, int] | None,
    one_per_entry: Iterable[str] = (),
    queues: Mapping[str, int] | None = None,
) -> list[str]:
    """Explanations of every way a consumer's unacked-message figures (``unackedMessages``,
    ``blockedConsumerOnUnackedMsgs``) or its ``msgOutCounter`` contradict the per-consumer limit or the trace.

    What Apache Pulsar's ``Consumer`` does (every release line, persistent topics): ``sendMessages`` adds each
    entry's messages to ``unackedMessages`` and to ``msgOutCounter``, and sets ``blockedConsumerOnUnackedMsgs``
    when ``maxUnackedMessages > 0`` and the count has reached it (``>=``); ``flowPermits`` sets it on the same
    condition; only an ack that brings the count down to half the limit, or a redeliver (a nack, a redeliver
    request, the ack timeout), clears it.  So:

    * with ``limit`` (the ``broker_conf`` setting) 0 or below, no consumer is ever blocked (the flag needs a
      positive limit), whatever happened in the run;
    * with a positive ``limit`` and a trace without redelivery of any kind (``received`` given: see below), a
      consumer holding ``limit`` or more unacknowledged messages is blocked (nothing cleared the flag the send that
      reached the limit set);
    * ``received`` (per consumer name: the messages the trace shows it received) is given only for a drained run on
      a persistent, unpartitioned topic with no nack, redeliver request, redelivered receive, fault, close or crash:
      every message was then sent once, to one consumer, and taken by the application, so each consumer's
      ``msgOutCounter`` read after the drain is exactly its receives; and, with its receiver queue q > 0 (``queues``)
      and nothing left unacknowledged or blocked, its ``availablePermits`` is what the client's flow control left
      the broker: q granted at subscribe, one permit per message sent, and a ``Flow`` of the permits back each time
      the application has taken max(q / 2, 1) messages (the Java and C++ clients' refill threshold), so
      q - R mod max(q / 2, 1) after R receives.  For the document read before the drain
      (``subscription_stats_held``: messages may still be on their way) ``received`` is empty: the run had no
      redelivery, but the counter is not compared;
    * ``one_per_entry`` names the consumers that received a message since the latest fault (a reconnect makes a new
      broker-side consumer, whose counters start again) in a run whose every entry holds one message
      (no published or received message id carries a batch index): each send then adds 1 message per entry to the
      consumer's moving ``avgMessagesPerEntry`` (``Consumer.sendMessages``), so the stats print 1 for them, with or
      without redeliveries (judged after the drain only: the trace does not show which receives preceded the
      read before it).

    One stats document, read while the consumers are connected: acks still in flight change ``unackedMessages``
    and the flag together (an ack clears the flag only when the count is down to half the limit), never the
    counter; equal timestamps do not enter.
    """
    problems: list[str] = []
    for consumer in (c for c in figures.get("consumers") or () if isinstance(c, Mapping)):
        name = consumer.get("consumerName")
        blocked = consumer.get("blockedConsumerOnUnackedMsgs")
        unacked = consumer.get("unackedMessages")
        if limit is not None and limit <= 0 and blocked is True:
            problems.append(
                f"stats_mismatch: consumer {name!r} is blockedConsumerOnUnackedMsgs, but maxUnackedMessagesPerConsumer"
                f" is {limit} (no limit): Pulsar blocks a consumer only under a positive limit"
            )
        if (
            received is not None
            and limit is not None
            and limit > 0
            and isinstance(unacked, int)
            and unacked >= limit
            and blocked is False
        ):
            problems.append(
                f"stats_mismatch: consumer {name!r} holds {unacked} unacknowledged messages, at or over"
                f" maxUnackedMessagesPerConsumer = {limit}, but is not blockedConsumerOnUnackedMsgs; the send that"
                " reached the limit blocks it, and nothing in this run (no ack to half the limit, no redelivery)"
                " unblocked it"
            )
        permits = consumer.get("availablePermits")
        queue = (queues or {}).get(str(name), 0)
        if received and str(name) in received and queue > 0 and unacked == 0 and blocked is not True:
            want = queue - received[str(name)] % max(queue // 2, 1)
            if isinstance(permits, int) and permits != want:
                problems.append(
                    f"stats_mismatch: consumer {name!r} has availablePermits {permits}, but with a receiver queue of"
                    f" {queue} and {received[str(name)]} messages taken (a Flow back every {max(queue // 2, 1)})"
                    f" the client left it {want}"
                )
        average = consumer.get("avgMessagesPerEntry")
        if str(name) in one_per_entry and isinstance(average, (int, float)) and average != 1:
            problems.append(
                f"stats_mismatch: consumer {name!r} has avgMessagesPerEntry {average}, but every entry of this run"
                " holds one message, so every send it had averaged 1"
            )
        out = consumer.get("msgOutCounter")
        if received and isinstance(out, int) and str(name) in received and out != received[str(name)]:
            problems.append(
                f"stats_mismatch: consumer {name!r} has msgOutCounter {out}, but received {received[str(name)]}"
                " messages; in this run every message was sent once and taken, so the two are equal"
            )
    return problems


#: Events after which a message may have been sent more than once, or a consumer's unacked count lowered other
#: than by an ack (:func:`consumer_counter_problems` then judges neither the counter nor the blocked flag).
_RESENDING_OPS = frozenset({"nack", "redeliver", "fault", "close", "crash"})


def subscription_stats_problems(trace_path: str | Path) -> list[str]:
    """:func:`stats_figure_problems` and :func:`consumer_counter_problems` of the subscription stats the run recorded
    at its end (the ``end`` event's ``subscription_stats``, and ``subscription_stats_held``, read after the last step
    before the drain acknowledged what the consumers held; a scenario asks for both with the
    ``record:subscription-stats`` tag; targets without an admin API record nothing, and nothing is judged).

    With the same tag the run asks the topic stats before its first step, when nothing has named the topic yet
    (the ``end`` event's ``topic_stats_before``): a broker must answer that there is no such topic (Pulsar's admin
    API: 404 ``Topic not found``, ``getTopicReferenceAsync`` looks the topic up with ``getTopicIfExists`` and
    creates nothing), so an answer (True) is a problem."""
    from conformance.trace.reader import open_trace

    trace = open_trace(trace_path)
    conf = trace.header.extra.get("broker_conf")
    raw_limit = conf.get("maxUnackedMessagesPerConsumer") if isinstance(conf, Mapping) else None
    limit = int(raw_limit) if isinstance(raw_limit, int) and not isinstance(raw_limit, bool) else None
    topic = str(trace.header.extra.get("topic") or "")
    exact = topic.startswith("persistent://")
    figures: Any = None
    held: Any = None
    before: Any = None
    names: dict[str, str] = {}
    opened: dict[str, int] = {}
    received: dict[str, int] = {}
    queues: dict[str, int] = {}
    batched = False  # a message id with a batch index: an entry of several messages may have been sent
    latest: set[str] = set()  # names that received something since the latest fault
    for event in trace.events():
        if event.msg_id is not None and MsgId.parse(event.msg_id).batch_index >= 0:
            batched = True
        if event.topic is not None and event.topic != topic:
            exact = False  # a partition's events: stats of the partitioned topic are not judged per consumer
        if event.op == "end":
            figures = event.extra.get("subscription_stats")
            held = event.extra.get("subscription_stats_held")
            before = event.extra.get("topic_stats_before")
            exact = exact and event.drained is True
        elif event.op in _RESENDING_OPS:
            exact = False
            if event.op == "fault":  # reconnected consumers are new broker-side consumers: their counters restart
                latest.clear()
        elif event.op == "open" and event.result in (None, "ok"):
            name = names[str(event.consumer)] = str(event.extra.get("name") or event.consumer)
            opened[name] = opened.get(name, 0) + 1
            queue = event.extra.get("receiver_queue")
            queues[name] = queue if isinstance(queue, int) and not isinstance(queue, bool) else 0
        elif event.op == "receive":
            if (event.redelivery_count or 0) > 0:
                exact = False
            name = names.get(str(event.consumer), str(event.consumer))
            received[name] = received.get(name, 0) + 1
            latest.add(name)
    exact = exact and all(n == 1 for n in opened.values())
    problems: list[str] = []
    if before is True:
        problems.append(
            f"the broker answered the stats of {topic or 'the run topic'} before any step named it; a topic that"
            " does not exist has no stats (Pulsar: 404 Topic not found), and asking must not create it"
        )
    # names of one incarnation only: a stats entry of a same-named consumer that was sent nothing prints its start value
    singles = () if batched else tuple(n for n in latest if opened.get(n) == 1)
    if isinstance(held, Mapping):  # read after the last step, before the drain acknowledged what was held
        problems += stats_figure_problems(held)
        problems += consumer_counter_problems(held, limit, {} if exact else None)  # receives may follow the read
    if isinstance(figures, Mapping):
        problems += stats_figure_problems(figures)
        problems += consumer_counter_problems(figures, limit, received if exact else None, singles, queues)
    return problems


def _position_of(text: object) -> tuple[int, int] | None:
    """``(ledger, entry)`` of a stored message id or a stats position (``"l:e"`` or ``"l:e:p:b"``), else ``None``."""
    parts = str(text).split(":") if text is not None else []
    try:
        ledger, entry = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None
    return (ledger, entry) if ledger >= 0 and entry >= 0 else None


def _conf_int(conf: object, name: str) -> int | None:
    value = conf.get(name) if isinstance(conf, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dedup_snapshot_problems(trace_path: str | Path) -> list[str]:
    """Explanations of a ``pulsar.dedup`` cursor (the deduplication snapshot, internal stats) recorded at the end
    of the run (the ``end`` event's ``dedup_cursor``, which a scenario asks for with the ``record:dedup-cursor``
    tag) that lags the entries the trace shows stored.

    Judged when the header says deduplication is on and its ``broker_conf`` gives the snapshot settings (a real
    broker's are not known to the trace), against the higher of two floors:

    * ``brokerDeduplicationEntriesInterval`` N: Pulsar's ``MessageDeduplication`` takes a snapshot (marks the
      cursor deleted at the entry) at every N-th entry persisted since the topic was loaded; a recovery may count
      replayed entries first (apache/pulsar#22479), which moves the snapshots earlier but keeps them N apart, and
      time-based snapshots only move the cursor further.  So with K >= N entries stored since the last broker
      restart (the distinct positions of ``ok`` receipts in ledgers newer than every one receipted before it: a
      reload writes to a new ledger, so a late receipt of the old broker is not counted), the cursor is at or past
      the (K - N + 1)-th of them.  Entries whose receipt the trace lacks (``info`` sends) only add entries after
      it, so the floor holds.
    * ``brokerDeduplicationSnapshotIntervalSeconds`` I and ``...FrequencyInSeconds`` F, both above 0, with
      ``brokerDeduplicationEnabled = true`` (before apache/pulsar#22479 the broker started the check only then): the
      check runs every F seconds and snapshots the last entry once I seconds passed since the last snapshot
      (``checkDeduplicationSnapshot``), so when the run ends I + F seconds or more after the receipt of the last
      entry stored since the restart, the cursor is at or past that entry.

    Read after the drain, when the snapshots' cursor updates have completed; equal timestamps only shorten the
    quiet time measured, so they can only leave the second floor unjudged.
    """
    from conformance.trace.reader import open_trace

    trace = open_trace(trace_path)
    header = trace.header
    conf = header.extra.get("broker_conf") if isinstance(header.extra, Mapping) else None
    interval = _conf_int(conf, "brokerDeduplicationEntriesInterval")
    seconds = _conf_int(conf, "brokerDeduplicationSnapshotIntervalSeconds")
    every = _conf_int(conf, "brokerDeduplicationSnapshotFrequencyInSeconds")
    broker_wide = isinstance(conf, Mapping) and conf.get("brokerDeduplicationEnabled") is True
    timed = broker_wide and seconds is not None and every is not None and seconds > 0 and every > 0
    if not header.deduplication or not ((interval is not None and interval >= 1) or timed):
        return []
    stored: dict[tuple[int, int], int] = {}  # position -> the time of its receipt
    old_ledger = -1  # the newest ledger receipted before the last restart: a reload writes to a newer one
    recorded: Any = None
    end_t = 0
    for event in trace.events():
        if event.op == "fault" and str(event.extra.get("fault", "")).startswith("broker_restart"):
            old_ledger = max([old_ledger, *(ledger for ledger, _ in stored)])
            stored.clear()
        elif event.op == "publish" and event.result == "ok":
            position = _position_of(event.msg_id)
            if position is not None and position[0] > old_ledger:
                stored.setdefault(position, event.t)
        elif event.op == "end":
            recorded, end_t = event.extra.get("dedup_cursor"), event.t
    if not isinstance(recorded, str) or not stored:
        return []
    entries = sorted(stored)
    floors: list[tuple[tuple[int, int], str]] = []
    if interval is not None and interval >= 1 and len(entries) >= interval:
        floors.append(
            (
                entries[len(entries) - interval],
                f"{len(entries)} entries were stored since the topic was last loaded ({entries[0][0]}:{entries[0][1]}"
                f" .. {entries[-1][0]}:{entries[-1][1]}) with a deduplication snapshot every {interval} entries",
            )
        )
    if timed and seconds is not None and every is not None:
        quiet_s = (end_t - stored[entries[-1]]) / 1e9
        if quiet_s >= seconds + every:
            floors.append(
                (
                    entries[-1],
                    f"the run ended {quiet_s:g} s after the last entry was stored ({entries[-1][0]}:{entries[-1][1]}),"
                    f" a time-based snapshot due every {seconds} s and checked every {every} s",
                )
            )
    if not floors:
        return []
    floor, why = max(floors)
    cursor = _position_of(recorded)
    if cursor is not None and cursor >= floor:
        return []
    shown = f"at {recorded}" if recorded else "missing"
    return [
        f"dedup_snapshot_behind: {why}, so the pulsar.dedup cursor must be at or past {floor[0]}:{floor[1]}, but the"
        f" internal stats show it {shown}"
    ]


def deliveries_outside_sticky_ranges(trace_path: str | Path) -> list[str]:
    """Explanations of every message a STICKY consumer received outside the hash ranges it declared.

    The documented rule (``KeySharedPolicy.stickyHashRange``; ``HashRangeExclusiveStickyKeyConsumerSelector``
    since apache/pulsar#24730): a STICKY consumer gets the keys whose hash ``% 65536`` lies in one of its ranges,
    and nothing else; a hash no consumer covers waits.  Judged from the trace alone, independent of the claimed
    release's selector, so a broker with #24730's gap bug fails even when it claims a release that had the bug.
    """
    from conformance.trace.reader import open_trace
    from reference_model.hashing import make_hash

    ranges: dict[str, list[tuple[int, int]]] = {}
    problems: list[str] = []
    for event in open_trace(trace_path).events():  # any trace form: JSON Lines, gzip, Parquet
        op, handle = event.op, str(event.consumer)
        if op == "open" and event.result in (None, "ok"):
            policy = event.extra.get("policy") or {}
            declared = policy.get("sticky_ranges")
            if policy.get("key_shared_mode") == "STICKY" and declared:
                ranges[handle] = [(int(a), int(b)) for a, b in declared]
            else:
                ranges.pop(handle, None)
        elif op == "receive" and handle in ranges and event.key is not None:
            slot = make_hash(event.key.encode("utf-8")) % 65536
            if not any(a <= slot <= b for a, b in ranges[handle]):
                problems.append(
                    f"outside_sticky_ranges: consumer {handle} received {event.msg_id} (key {event.key!r},"
                    f" hash slot {slot}) at E{event.i}, outside its declared ranges {ranges[handle]}"
                )
    return problems


def redeliveries_out_of_order(trace_path: str | Path) -> list[str]:
    """Explanations of every message the client's ack timeout released that came back before an earlier message
    of its key released with it.

    Pulsar's ``KeySharedSubscriptionTest.receiveAndCheck`` asserts that the messages redelivered after the ack
    timeout reach the application in per-key order among themselves, and the broker's source guarantees it:
    ``redeliverUnacknowledgedMessages`` adds the positions to the replay set, which is sorted
    (``MessageRedeliveryController.getMessagesToReplayNow`` returns the smallest positions first), and a replay
    read is dispatched in position order.  What is not promised is their order against *new* messages: the
    positions carry no sticky-key hash, so a normal read of the key is not held back (the trace checker's
    exemption after a release stays).  So the rule compares redeliveries with each other only: the first receive
    of a released message m (E``j``) is out of order when an earlier receive (E``i`` < E``j``) redelivered a
    message m' of the same key and partition with a later position, and m had been released before E``i``
    (both were owed at once, so the smaller position should have come first).  Released: a ``nack`` with
    ``cause = "ack_timeout"`` (:meth:`Recorder.ack_timeout`).
    """
    from conformance.trace.identity import canonical_message, parse_position
    from conformance.trace.reader import open_trace

    released: dict[str, int] = {}  # message key -> the release's event index, until its next receive
    redelivered: dict[tuple[str, str], list[tuple[tuple[int, int, int], int, str]]] = {}  # (stream, key) -> ...
    problems: list[str] = []
    for event in open_trace(trace_path).events():
        op = event.op.value
        if event.msg_id is None or event.topic is None or op not in ("nack", "receive"):
            continue
        mkey, stream, canon = canonical_message(event.topic, event.msg_id)
        if op == "nack":
            if event.extra.get("cause") == "ack_timeout":
                released.setdefault(mkey, event.i)
            continue
        release = released.pop(mkey, None)
        if release is None:
            continue
        pos = parse_position(canon)
        seen = redelivered.setdefault((stream, str(event.key)), [])
        for other_pos, at, other_id in seen:
            if other_pos > pos and at > release:
                problems.append(
                    f"out_of_order: key {event.key!r}: {event.msg_id}, released by the ack timeout at E{release},"
                    f" came back at E{event.i}, after the later {other_id} came back at E{at}: redelivered"
                    " messages of a key must come back in order among themselves"
                )
                break
        seen.append((pos, event.i, event.msg_id))
    return problems


def case_problems(scenario: Scenario, result: Any, *, progress: bool = True) -> list[tuple[str, Kind, str]]:
    """What the case judges beyond the trace checker, as ``(contract, kind, explanation)``.

    STICKY scenarios: deliveries outside the declared ranges (an accepted conflicting open is the trace checker's
    ``accepted_conflicting_open``).  Non-persistent scenarios: a paused consumer sent more than its permits
    (:mod:`conformance.cases._permits`).  Scenarios with the client's ack timeout: redeliveries out of order among
    themselves (:func:`redeliveries_out_of_order`).  With ``progress``: ``wait_received`` steps that timed out
    (:func:`progress_problems`).
    """
    problems: list[tuple[str, Kind, str]] = []
    if scenario.subscription.mode == "STICKY" or any(
        isinstance(s, Open) and s.mode == "STICKY" for s in scenario.steps
    ):
        outside = deliveries_outside_sticky_ranges(result.trace_path)
        if outside:
            problems.append(("assignment", Kind.OUTSIDE_STICKY_RANGES, _first_of(outside)))
    beyond = received_beyond_permits(scenario, result)
    if beyond:
        problems.append(("delivery", Kind.RECEIVED_BEYOND_PERMITS, _first_of(beyond)))
    if any(isinstance(s, Open) and s.ack_timeout_ms for s in scenario.steps):
        reordered = redeliveries_out_of_order(result.trace_path)
        if reordered:
            problems.append(("ordering", Kind.OUT_OF_ORDER, _first_of(reordered)))
    shared = deliveries_in_shared_published_ranges(result.trace_path)
    if shared:
        problems.append(("assignment", Kind.MISASSIGNED, _first_of(shared)))
    inconsistent = subscription_stats_problems(result.trace_path)
    if inconsistent:
        problems.append(("key-exclusivity", Kind.STATS_MISMATCH, _first_of(inconsistent)))
    behind = dedup_snapshot_problems(result.trace_path)
    if behind:
        problems.append(("deduplication", Kind.DEDUP_SNAPSHOT_BEHIND, behind[0]))
    counters = snapshot_metrics_problems(result.trace_path)
    if counters:
        problems.append(("replication", Kind.STATS_MISMATCH, _first_of(counters)))
    misplaced = message_id_problems(result.trace_path)
    if misplaced:
        problems.append(("message-ids", Kind.WRONG_MESSAGE_ID, _first_of(misplaced)))
    renumbered = sequence_id_problems(result.trace_path)
    if renumbered:
        problems.append(("deduplication", Kind.WRONG_SEQUENCE_ID, _first_of(renumbered)))
    problems.extend(client_view_problems(result.trace_path))
    if scenario.settings.dead_letter:
        late = receives_past_dead_letter(result.trace_path, scenario.settings.dead_letter)
        if late:
            problems.append(("redelivery", Kind.NOT_DEAD_LETTERED, _first_of(late)))
    if progress:
        problems.extend(progress_problems(result, scenario))
    return problems


def receives_past_dead_letter(trace_path: str | Path, maximum: int) -> list[str]:
    """Explanations of every receive whose redelivery count (as the client reported it) is above the dead-letter
    policy's ``maximum``: the client hands a message over with counts 0 .. maximum and routes it to the
    dead-letter topic instead of handing it over again (``ConsumerImpl``: a copy arriving above the maximum goes
    there unseen), so such a receive means the message was never dead-lettered.  Sound on any trace: the count
    is the broker's and the rule the client's."""
    from conformance.trace.reader import open_trace

    found = []
    for event in open_trace(trace_path).events():
        count = event.redelivery_count
        if event.op.value == "receive" and count is not None and count > maximum:
            found.append(
                f"not_dead_lettered: E{event.i} {event.consumer} received {event.msg_id} (key {event.key!r}) with"
                f" redelivery count {count}, above the dead-letter policy's max_redeliver_count {maximum}: the client"
                " should have routed it to the dead-letter topic"
            )
    return found


def sequence_id_problems(trace_path: str | Path) -> list[str]:
    """Explanations of every send whose client, right after its receipt, reported a last published sequence id
    other than the send's own id (a ``publish`` with ``last_seq``, which the driver records on a send made one at
    a time with an id above every id its producer sent before).

    The id the send went with is the trace's ``seq``: the driver's own, or, for a message the client numbered
    (``sequence = "auto"``), the one the client must give it when it numbers from the broker's answer on connect
    (the producer's ``last_sequence_id``) and counts up by one per message.  Pulsar's clients set the last
    published id from the receipt of the send (``ProducerImpl.ackReceived``: the receipt's sequence id, plus the
    batch's size less one), so a difference means the send went out under another id: a broker that answered a
    wrong last sequence id, a client that numbers wrongly, or a receipt for another id.  Sound on any trace:
    an id above every earlier one is the last published whatever a client does with lower ids (``max`` in the
    Java client, the receipt's in the C++ one).  A message of a batch (a batch index in its id; the driver records
    ``last_seq`` there only for default batches of consecutive ids) leaves it at its batch's last id, the first
    plus the count less one: at or above the message's own id; not judged on a partitioned topic, where each
    partition's batch holds only the ids routed to it."""
    from conformance.trace.reader import open_trace

    found = []
    for event in open_trace(trace_path).events():
        last = event.extra.get("last_seq")
        if event.op.value != "publish" or last is None or event.result != "ok" or event.seq is None:
            continue
        stored = MsgId.parse(event.msg_id) if event.msg_id is not None else None
        batched = stored is not None and stored.batch_index >= 0
        if stored is not None and batched and stored.partition >= 0:
            continue  # one partition's batch holds the ids routed there, not consecutive ones
        if (int(last) < int(event.seq)) if batched else (int(last) != int(event.seq)):
            found.append(
                f"wrong_sequence_id: E{event.i} producer {event.producer}'s send of {event.uid} (sequence id"
                f" {event.seq}, stored as {event.msg_id}) left its client's last published sequence id at {last}:"
                " the message went out under another id"
            )
    return found


def batch_size_problems(trace_path: str | Path) -> list[str]:
    """Explanations of every batch whose messages' payloads add up to more than the client's ``batchingMaxBytes``.

    A batching client adds a message to the open batch only while it has room: before adding it sends the batch
    if the message's payload would take it past ``batchingMaxBytes`` (the C++ client's ``ProducerImpl::sendAsync``
    with ``BatchMessageContainerBase::hasEnoughSpace``, the Java client's
    ``BatchMessageContainerImpl.haveEnoughSpace``), so a batch of two or more messages never holds more payload
    bytes than that; one message larger than the limit goes alone.  Which messages share a batch a client can
    see: they share an entry, numbered by batch index in their ids (``ledger:entry:partition:batch_index``).  The
    driver records the limit its batching producers use in the header (``batching_max_bytes``) and each batched
    message's payload size on its ``publish`` (``bytes``); an entry is judged when two or more ``ok`` publishes of
    one producer name it and each carries ``bytes``.  Sound on any trace: the ids and sizes are the receipts',
    order, timestamps and acks play no part."""
    from conformance.trace.reader import open_trace

    source = open_trace(trace_path)
    limit = source.header.extra.get("batching_max_bytes")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return []
    entries: dict[tuple[str | None, str | None, int, int, int], list[tuple[int, int]]] = {}
    for event in source.events():
        size = event.extra.get("bytes")
        if event.op.value != "publish" or event.result != "ok" or event.msg_id is None or size is None:
            continue
        stored = MsgId.parse(event.msg_id)
        if stored.batch_index < 0 or stored.ledger < 0:
            continue
        entry = (event.topic, event.producer, stored.ledger, stored.entry, stored.partition)
        entries.setdefault(entry, []).append((int(size), event.i))
    found = []
    for (topic, producer, ledger, entry_id, partition), messages in entries.items():
        total = sum(size for size, _ in messages)
        if len(messages) > 1 and total > limit:
            first = min(i for _, i in messages)
            found.append(
                f"oversized_batch: producer {producer}'s entry {ledger}:{entry_id}:{partition} of {topic} (first"
                f" publish E{first}) holds {len(messages)} messages of {total} payload bytes, above the client's"
                f" batchingMaxBytes {limit}: the batch took a message it had no room for"
            )
    return found


def client_view_problems(trace_path: str | Path) -> list[tuple[str, Kind, str]]:
    """``(contract, kind, explanation)`` of the judgements of :data:`CLIENT_VIEW_JUDGEMENTS` (``oversized_batch``,
    ``batch_flushed_early``, ``wrong_event_time``), the first explanation of each kind with a count of the rest."""
    problems = []
    for contract, kind, judge in CLIENT_VIEW_JUDGEMENTS:
        found = judge(trace_path)
        if found:
            problems.append((contract, kind, _first_of(found)))
    return problems


def _first_of(found: list[str]) -> str:
    """The first of a judgement's explanations, with a count of the rest: what a case reports of each kind."""
    return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")


class _SpacedSend(NamedTuple):
    """A publish of a step whose sends were spaced (``step`` on the event), as :func:`early_batch_problems` reads it."""

    t0: int
    seq: int
    i: int
    entry: tuple[int, int]
    size: int
    uid: str | None


def early_batch_problems(trace_path: str | Path) -> list[str]:
    """Explanations of every batch a client sent before its publish delay had passed although it had room for the
    message sent next.

    A batching client closes its open batch for three reasons only (besides an explicit flush, which the driver
    calls once a step's sends are done): the next message finds no room (``batchingMaxMessages`` reached, or its
    payload would take the batch past ``batchingMaxBytes``), the batch became full as a message was added, or the
    batch's timer fired, ``batchingMaxPublishDelay`` after its first message was added (the C++ client arms the
    timer as it adds a batch's first message, ``ProducerImpl::sendAsync``, re-arming it cancels the wait of the
    batch before; the Java client's flush task likewise).  The driver's spaced sends (a publish step's
    ``spacing_ms``: ``step`` on each of its publishes) are made one after another from one thread, and each send's
    ``t0`` is taken after the previous send call returned.  So for three consecutive sends a, b, c of a step: b was
    added to the client's batches before ``t0(c)``, and the batch B holding a was begun no earlier than the
    smallest ``t0`` of its messages, f.  If b is not in B, B was closed before b was added; when
    ``t0(c) < f + delay`` its timer cannot have fired by then, and when B was not full and had room for b's
    payload, nothing else closed it: the batch was sent early.  Judged on the ``ok`` publishes of a step whose
    every send was ``ok``, with ``bytes`` and a batch index, on an unpartitioned topic, when the header names the
    limits (``batching_max_messages``, ``batching_max_bytes``, ``batching_max_publish_delay_ms``), and not in a
    trace with a ``fault`` (a reconnecting producer's batches are not judged).  Acks and the order events were
    logged in play no part; equal timestamps order a step's sends by sequence id."""
    from conformance.trace.reader import open_trace

    source = open_trace(trace_path)
    limits = [source.header.extra.get(name) for name in _BATCH_LIMITS]
    if not all(isinstance(value, int) and not isinstance(value, bool) and value > 0 for value in limits):
        return []
    max_messages, max_bytes, delay_ms = (int(value) for value in limits)  # type: ignore[arg-type]
    steps: dict[tuple[str | None, int], list[_SpacedSend | None]] = {}
    for event in source.events():
        if event.op.value == "fault":
            return []
        step = event.extra.get("step")
        if event.op.value != "publish" or step is None:
            continue
        sends = steps.setdefault((event.producer, int(step)), [])
        stored = MsgId.parse(event.msg_id) if event.msg_id is not None and event.result == "ok" else None
        size = event.extra.get("bytes")
        t0 = event.extra.get("t0", event.t)
        if stored is None or stored.batch_index < 0 or stored.partition >= 0 or size is None or event.seq is None:
            sends.append(None)  # not judged: the step's sends are judged only when every one was stored in a batch
            continue
        sends.append(_SpacedSend(int(t0), event.seq, event.i, (stored.ledger, stored.entry), int(size), event.uid))
    found = []
    for (producer, step), recorded in steps.items():
        if any(send is None for send in recorded):
            continue
        ordered = sorted((send for send in recorded if send is not None), key=lambda send: (send.t0, send.seq))
        batches: dict[tuple[int, int], list[_SpacedSend]] = {}
        for send in ordered:
            batches.setdefault(send.entry, []).append(send)
        for a, b, c in zip(ordered, ordered[1:], ordered[2:], strict=False):
            if a.entry == b.entry:
                continue
            batch = batches[a.entry]
            begun = min(send.t0 for send in batch)
            held = sum(send.size for send in batch)
            full = len(batch) >= max_messages or held >= max_bytes
            if c.t0 >= begun + delay_ms * 1_000_000 or full or held + b.size > max_bytes:
                continue
            first = min(batch, key=lambda send: send.t0)
            found.append(
                f"batch_flushed_early: producer {producer}'s batch {a.entry[0]}:{a.entry[1]} (step {step}, {len(batch)}"
                f" message{'s' if len(batch) != 1 else ''}, {held} payload bytes, begun at the send of E{first.i})"
                " was sent"
                f" before its publish delay of {delay_ms} ms had passed, though it had room for the next send,"
                f" E{b.i} ({b.uid}, {b.size} bytes), added before E{c.i}'s send began"
                f" {(c.t0 - begun) / 1_000_000:g} ms after the batch's: only a full batch, one without room for the"
                " next message, the delay or a flush closes a batch"
            )
    return found


#: the header's batching limits of the driver's producers, as :func:`early_batch_problems` reads them
_BATCH_LIMITS = ("batching_max_messages", "batching_max_bytes", "batching_max_publish_delay_ms")


def event_time_problems(trace_path: str | Path) -> list[str]:
    """Explanations of every receive whose message carried an event time other than the one it was published with.

    The event time is message metadata the producer sets (``MessageMetadata.event_time``, 0 or absent: none) and
    the broker stores and dispatches untouched; a consumer reads it back (``Message.event_timestamp()``).  The
    driver records it on a ``receive`` as the extension field ``event_time`` when the message carries one, and on
    a ``publish`` when the send set one (this project's harness sends none, so every recorded receive's is
    judged against 0).  A receive is matched to its publishes by ``uid``; a uid no publish carries is
    ``unexpected_message``'s, not judged here, and so is a receive without the field (a recorder that does not
    record event times, or a message without one).  Sound on any trace: the order of events, timestamps and acks
    play no part, and every publish of a uid (a resend included) carries the uid's one event time."""
    from conformance.trace.reader import open_trace

    sent: dict[str, int] = {}
    received = []
    for event in open_trace(trace_path).events():
        op = event.op.value
        if op == "publish" and event.uid is not None:
            sent.setdefault(event.uid, int(event.extra.get("event_time") or 0))
        elif op == "receive" and event.uid is not None and event.extra.get("event_time") is not None:
            received.append(event)
    found = []
    for event in received:
        got = int(event.extra["event_time"])
        expected = sent.get(event.uid)  # type: ignore[arg-type]
        if expected is None or got == expected:
            continue
        what = f"event time {expected}" if expected else "no event time"
        found.append(
            f"wrong_event_time: E{event.i} {event.consumer} received {event.msg_id} (uid {event.uid}) with event time"
            f" {got}, but it was published with {what}: the broker must deliver a message's metadata as it was sent"
        )
    return found


def message_id_problems(trace_path: str | Path) -> list[str]:
    """Explanations of message ids no managed ledger gives: the entries of a ledger numbered from 0 with no gap,
    and a topic loaded again after a broker restart writing to a new, higher ledger.

    Pulsar's ``ManagedLedgerImpl`` writes each topic to a ledger whose entry ids BookKeeper hands out 0, 1, 2, ...,
    and a topic loaded again (a broker restart) always creates a new ledger to write to; ledger ids only grow.  So:

    * in every ledger, the entries of the ``ok`` receipts are 0 .. n with none missing, when every entry of the
      topic was a traced send with a receipt: judged only on a persistent topic of a run that is not a failover
      run (replicators and snapshot markers write entries no client is told of) and whose every ``publish`` on
      that topic was ``ok`` (a send of unknown or failed outcome may have left an entry without a receipt);
    * a send begun after a ``broker_restarted`` fault is stored in a ledger above every ledger of a receipt
      logged before the ``broker_restart`` that preceded it.  A send began after it when its ``t0`` is later, or
      when the run published synchronously (the scenario driver's header ``publish_mode: "sync"``: each send's
      outcome is logged before the next step, so a publish logged after the restart's end was sent after it).

    Filed under the ``deduplication`` contract: these are the storage positions deduplication is judged by (a
    stored id's position, the snapshot's cursor, the ledger a reload writes to: ``dedup_snapshot_problems``).

    Timestamps order nothing here but a ``t0`` against the restart's end (equal ones are not judged, except in a
    synchronous run), and acks play no part."""
    from conformance.checks.nonpersistent import is_non_persistent
    from conformance.trace.reader import open_trace

    trace = open_trace(trace_path)
    header = trace.header
    if is_non_persistent(header) or header.extra.get("clusters"):
        return []
    found: list[str] = []
    entries: dict[tuple[str, int, int], set[int]] = {}  # (topic, partition, ledger) -> entry ids receipted
    unsure: set[str] = set()  # topics with a send of unknown or failed outcome
    before: dict[str, int] = {}  # topic -> the highest ledger receipted before the latest restart began
    seen: dict[str, int] = {}  # topic -> the highest ledger receipted so far
    restarted_t: int | None = None
    sync = header.extra.get("publish_mode") == "sync"
    for event in trace.events():
        op = event.op.value
        if op == "fault":
            fault = str(event.extra.get("fault", ""))
            if fault == "broker_restart":
                before, restarted_t = dict(seen), None
            elif fault == "broker_restarted":
                restarted_t = event.t
            continue
        if op != "publish":
            continue
        topic = str(event.topic)
        if event.result != "ok":
            unsure.add(topic)
            continue
        if event.msg_id is None:
            continue
        stored = MsgId.parse(event.msg_id)
        if stored.ledger < 0:
            continue  # a duplicate's receipt (-1:-1): no entry
        ledger, entry, partition = stored.ledger, stored.entry, stored.partition
        entries.setdefault((topic, partition, ledger), set()).add(entry)
        seen[topic] = max(seen.get(topic, ledger), ledger)
        t0 = event.extra.get("t0")
        old = before.get(topic)
        after = restarted_t is not None and (sync or (isinstance(t0, int) and t0 > restarted_t))
        if after and old is not None and ledger <= old:
            found.append(
                f"wrong_message_id: E{event.i} {event.uid} was sent after the broker restarted but stored as"
                f" {event.msg_id}, in ledger {ledger}, not above ledger {old} written before the restart: a topic"
                " loaded again writes to a new ledger"
            )
    for (topic, _, ledger), ids in sorted(entries.items()):
        if topic in unsure:
            continue
        missing = sorted(set(range(max(ids) + 1)) - ids)
        if missing:
            found.append(
                f"wrong_message_id: ledger {ledger} of {topic} has receipts for entries {min(ids)}..{max(ids)} but"
                f" none for entry {missing[0]} ({len(missing)} missing), though every send to the topic was"
                " receipted: a ledger's entry ids run 0, 1, 2, ... with no gap"
            )
    return found


def run_case(scenario: Scenario, run: Any, check: Any, *, progress: bool = True) -> Any:
    """Run ``scenario`` and judge it: the trace checker, plus :func:`case_problems`.

    Every trace rule lives in ``conformance/checks/``: an accepted STICKY open that Pulsar refuses is the checker's
    ``accepted_conflicting_open`` (``conformance.checks.assignment``), judged on any trace form.

    On the model target, a case with ``model-release:`` tags (:func:`model_releases_of`) runs and is judged at each
    named release first; a broken contract there fails the case, with the release named.
    """
    for spec in model_releases_of(scenario):
        other = run.target.at_release(spec)
        if other is not None:
            _judge(scenario, run(scenario, label=spec.replace(":", "-"), target=other), check, progress, spec)
    return _judge(scenario, run(scenario), check, progress, None)


def _judge(scenario: Scenario, result: Any, check: Any, progress: bool, release: str | None) -> Any:
    """:func:`run_case`'s judgement of one run (``release``: the ``model-release:`` target it ran on, if one)."""
    where = f"at {release}: " if release is not None else ""
    for contract, kind, problem in case_problems(scenario, result, progress=progress):
        check.violation(contract, where + problem, kind=kind, defer=True)
    profile: Any = profile_of(scenario)
    return check(result) if profile is None else check(result, profile=profile)


#: the case-level judgements of what the client saw of batches and metadata that are sound on any trace of any
#: run: the cases judge them (:func:`case_problems`), and so do the generated programs (Hypothesis' and the sweep's)
CLIENT_VIEW_JUDGEMENTS: tuple[tuple[str, Kind, Callable[[str | Path], list[str]]], ...] = (
    ("message-ids", Kind.OVERSIZED_BATCH, batch_size_problems),
    ("message-ids", Kind.BATCH_FLUSHED_EARLY, early_batch_problems),
    ("delivery", Kind.WRONG_EVENT_TIME, event_time_problems),
)
