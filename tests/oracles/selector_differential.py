"""Run one membership program through the model's selector and the oracle's, and list where they disagree.

A program is plain data (:class:`Program`): a selector, a release, its settings, and steps (a consumer joins under
a name, with sticky ranges for STICKY; the k-th member leaves; the k-th member leaves and rejoins under its name
as a new connection; ``fork``: the program goes on with a copy of the model's selector and of the oracle, while the
originals are kept and asked again after every later step, so a copy that shares state with its original shows).
After every step both sides are asked the same questions: was the consumer refused (and for which reason, and
which connected consumer a range conflict names, as the broker's error text does), what did each member lose (4.x
impacted ranges), what do the topic stats print, which consumer owns each probed slot (every ring point or range
bound and its neighbours, the ends of the hash range, the slots given; 4.x also through the assignment snapshot's
own lookup), and which slot each given key hashes to (through the selector and through the model's hashing
helpers ``sticky_key_hash`` / ``key_hash_range``, which the documentation offers for the same question).
:func:`disagreements` returns the differences as lines; the differential test demands none,
``benchmarks/oracle_mutation.py`` counts the mutants that cause some.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from selector_oracle import Member, OracleSelector, Refused, oracle_selector

from reference_model.errors import ConsumerAssignError
from reference_model.hashing import key_hash_range, sticky_key_hash
from reference_model.selectors import ConsumerRef, Selector, make_selector

Ranges = tuple[tuple[int, int], ...] | None


@dataclass(frozen=True)
class Step:
    op: str  #: ``join``, ``leave``, ``rejoin``, ``fork``
    name: str = ""
    ranges: Ranges = None  #: sticky joins: the consumer's hash ranges (``None``: no key-shared meta)
    index: int = 0  #: ``leave`` / ``rejoin``: which member (modulo the number of members)


@dataclass(frozen=True)
class Program:
    kind: str
    version: str
    steps: tuple[Step, ...]
    points: int = 100
    classic: bool = False
    range_size: int = 65536
    slots: tuple[int, ...] = ()
    keys: tuple[bytes, ...] = field(default=(b"key-0", b"a", b"someKey1", b""))


_MODEL_REASONS = (
    ("Must specify key shared meta", "no-meta"),
    ("must not be empty", "empty"),
    ("start > end", "inverted"),
    ("own ranges conflict", "own-overlap"),
    ("Range conflict", "conflict"),
    ("No more range", "no-range-left"),
)


def model_reason(error: Exception) -> str:
    text = str(error)
    return next((reason for marker, reason in _MODEL_REASONS if marker in text), f"unrecognised: {text}")


def _member(ref: ConsumerRef) -> Member:
    return Member(ref.name, ref.consumer_id)


_NAMED = re.compile(r"Range conflict with consumer .*\(consumer_id (\d+)\)")


def model_culprit(error: Exception) -> int | None:
    """The consumer id a model's range-conflict refusal names (``None``: it names none)."""
    found = _NAMED.search(str(error))
    return None if found is None else int(found.group(1))


def _probes(program: Program, oracle: OracleSelector) -> list[int]:
    if oracle.key_range is not None:
        low, high = oracle.key_range
        if program.kind == "auto-split":
            high = program.range_size  # the top bound is rangeSize itself
    else:
        low, high = 0, 2**31 - 1
    found = {low, low + 1, high - 1, high}
    # Either side of every boundary; the list era's points pick ``list[slot % size]``, so three slots at a point.
    around = (-2, -1, 0, 1) if program.kind == "consistent-hashing" and oracle.era.ring == "list" else (-1, 0, 1)
    for b in oracle.boundaries():
        found.update(b + d for d in around)
    if oracle.key_range is None and program.kind != "consistent-hashing":
        found.update(s + program.range_size * k for s in list(found) for k in (1, 7919) if s >= 0)
    found.update(program.slots)
    return sorted(s for s in found if low <= s <= high)


def _ask(program: Program, model: Selector, oracle: OracleSelector, where: str) -> list[str]:
    out: list[str] = []
    got = {_member(c): list(r) for c, r in model.ranges().items() if r}
    want = oracle.stats_ranges()
    if got != want:
        diff = {m: (got.get(m), want.get(m)) for m in set(got) | set(want) if got.get(m) != want.get(m)}
        out.append(f"{where}: stats ranges differ (member: model, oracle): {diff}")
    for slot in _probes(program, oracle):
        picked = model.select(slot)
        mine = None if picked is None else _member(picked)
        if mine != oracle.select(slot):
            out.append(f"{where}: select({slot}) model {mine}, oracle {oracle.select(slot)}")
            break
    if oracle.era.pip379:
        snapshot, theirs = model.snapshot(), oracle.snapshot()
        for slot in _probes(program, oracle):
            found = snapshot.consumer_of(slot)
            listed = None if found is None else _member(found)
            owner = next((m for s, e, m in theirs if s <= slot <= e), None)
            if listed != owner:
                out.append(f"{where}: snapshot consumer_of({slot}) model {listed}, oracle {owner}")
                break
    helper = program.kind != "auto-split" or program.range_size == 65536  # the helpers know the broker's size only
    if helper:
        reduced = key_hash_range(program.kind, program.version, classic=program.classic)
        if reduced != oracle.key_range:
            out.append(f"{where}: key_hash_range model {reduced}, oracle {oracle.key_range}")
    for key in program.keys:
        if model.slot_of(key) != oracle.slot_of(key):
            out.append(f"{where}: slot_of({key!r}) model {model.slot_of(key)}, oracle {oracle.slot_of(key)}")
        hashed = sticky_key_hash(key, program.kind, program.version, classic=program.classic) if helper else None
        if helper and hashed != oracle.slot_of(key):
            out.append(f"{where}: sticky_key_hash({key!r}) model {hashed}, oracle {oracle.slot_of(key)}")
    return out


def disagreements(program: Program, *, first_only: bool = True) -> list[str]:
    """Every difference between the model and the oracle on ``program`` (stops at the first step with some)."""
    model = make_selector(
        program.kind,
        program.version,
        program.points,
        classic=program.classic,
        range_size=None if program.kind == "consistent-hashing" else program.range_size,
    )
    oracle = oracle_selector(
        program.kind, program.version, program.points, classic=program.classic, range_size=program.range_size
    )
    members: list[ConsumerRef] = []
    given: dict[int, Ranges] = {}  # consumer_id -> the sticky ranges it joined with
    next_id = 1
    out: list[str] = []
    originals: list[tuple[str, Selector, OracleSelector]] = []  # forked from: each must stay as it was
    for n, step in enumerate(program.steps):
        where = f"step {n} {step}"
        joins: list[tuple[str, Ranges]] = []
        if step.op == "fork":
            originals.append((where, model, oracle))
            model, oracle = model.copy(), copy.deepcopy(oracle)
        elif step.op in ("leave", "rejoin"):
            if not members:
                continue
            ref = members.pop(step.index % len(members))
            impacted = model.remove(ref)
            oracle.remove(_member(ref))
            out += _impacted(impacted, oracle, where)
            if step.op == "rejoin":
                joins.append((ref.name, given.pop(ref.consumer_id, None)))
        else:
            joins.append((step.name, step.ranges))
        for name, ranges in joins:
            ref = ConsumerRef(name, next_id)
            next_id += 1
            given[ref.consumer_id] = ranges
            out += _join(model, oracle, ref, ranges, members, program.kind, where)
        out += _ask(program, model, oracle, where)
        for forked_at, kept_model, kept_oracle in originals:
            out += _ask(program, kept_model, kept_oracle, f"{where}: the original copied at {forked_at}")
        if out and first_only:
            return out
    return out


def _join(
    model: Selector,
    oracle: OracleSelector,
    ref: ConsumerRef,
    ranges: Ranges,
    members: list[ConsumerRef],
    kind: str,
    where: str,
) -> list[str]:
    as_list: Sequence[tuple[int, int]] | None = None if ranges is None else list(ranges)
    model_error: Exception | None = None
    impacted = None
    try:
        impacted = model.add(ref, as_list) if kind == "sticky" else model.add(ref)
    except ConsumerAssignError as exc:
        model_error = exc
    oracle_error: Refused | None = None
    try:
        oracle.add(_member(ref), as_list if kind == "sticky" else None)
    except Refused as exc:
        oracle_error = exc
    if model_error is None and oracle_error is None:
        members.append(ref)
        return _impacted(impacted, oracle, where)
    if model_error is None or oracle_error is None:
        side = "oracle" if model_error is None else "model"
        return [f"{where}: {ref} refused by the {side} only ({model_error or oracle_error})"]
    if model_reason(model_error) != oracle_error.kind:
        reason = model_reason(model_error)
        return [f"{where}: model refuses for {reason!r}, oracle for {oracle_error.kind!r} ({model_error})"]
    if oracle_error.culprit is not None and model_culprit(model_error) != oracle_error.culprit.consumer_id:
        return [f"{where}: the conflict names consumer_id {model_culprit(model_error)}, oracle {oracle_error.culprit}"]
    return []


def _impacted(impacted: object, oracle: OracleSelector, where: str) -> list[str]:
    if not oracle.track_removed:
        return [] if impacted is None else [f"{where}: model returned impacted ranges the release does not compute"]
    if impacted is None:
        return [f"{where}: model returned no impacted ranges"]
    got = {_member(c): list(r) for c, r in impacted.items()}  # type: ignore[attr-defined]
    if got != oracle.last_removed:
        return [f"{where}: impacted ranges: model {got}, oracle {oracle.last_removed}"]
    return []
