"""Hand-written traces with crashed consumers for the ``gone`` tests (``tests/unit/test_check_crash_removal.py``,
``tests/spark/test_spark_trust.py``): their memberships computed with the reference selectors."""

from __future__ import annotations

from collections.abc import Iterable

from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from reference_model.selectors import ConsumerRef, make_selector

__all__ = [
    "KEYS",
    "crashed_then_join",
    "header",
    "many_crashes",
    "moved_by_the_crashed",
    "owner",
    "selector",
    "wrong_receiver",
]

KEYS = [f"k{n}" for n in range(400)]


def header(kind: str) -> TraceHeader:
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), selector=SelectorSpec(kind, "4.0"))


def selector(kind: str, steps: Iterable[tuple[str, str, int]]) -> object:
    """A reference selector after ``steps``: ``("add" | "remove", name, consumer id)``."""
    sel = make_selector(kind, "4.0")
    for what, name, cid in steps:
        getattr(sel, what)(ConsumerRef(name, cid))
    return sel


def owner(sel: object, key: str) -> str:
    return sel.select_key(key.encode()).name  # type: ignore[attr-defined,no-any-return]


def many_crashes(*, gone: bool, deliver_to: str | None = None, crashes: int = 8) -> TraceBuilder:
    """c0..c2 stay; ``crashes`` consumers join and crash one after another (a ``gone`` after each when
    ``gone``); then a message of every key goes to its owner, or one key's to ``deliver_to`` (planted)."""
    b = TraceBuilder(header("consistent-hashing"))
    steps = []
    for n in range(3):
        steps.append(("add", f"c{n}", b.open(f"c{n}").i))
    for n in range(crashes):
        name = f"x{n}"
        opened = b.open(name).i
        b.crash(name)
        if gone:
            b.gone(name)
        steps += [("add", name, opened), ("remove", name, opened)]
    sel = selector("consistent-hashing", steps)
    planted = KEYS[0]
    for n, key in enumerate(KEYS[:20]):
        to = deliver_to if (deliver_to is not None and key == planted) else owner(sel, key)
        b.publish(key, f"1:{n}", t0=b.t)
        b.receive(to, key, f"1:{n}")
        b.ack(to, f"1:{n}")
    b.end()
    return b


def moved_by_the_crashed() -> tuple[str, str, str]:
    """With auto-split a join splits the largest range, so whether a crashed consumer was still registered when
    the next one joined changes where it lands.  A key owned by a live consumer that differs between the two:
    (key, its owner when c was removed after d joined, its owner when c was removed before)."""
    base = [("add", "a", 0), ("add", "b", 1), ("add", "c", 2)]
    removed_after = selector("auto-split", [*base, ("add", "d", 4), ("remove", "c", 2)])
    removed_before = selector("auto-split", [*base, ("remove", "c", 2), ("add", "d", 4)])
    for key in KEYS:
        late, early = owner(removed_after, key), owner(removed_before, key)
        if late != early:
            return key, late, early
    raise AssertionError("no key moves with the crashed consumer")


def crashed_then_join(*, gone: str | None, to: str) -> TraceBuilder:
    """a, b, c join; c crashes; d joins; a message of the key, sent after that, goes to ``to`` ("late": where
    it goes if the broker removed c only after d joined; "early": if before).  ``gone``: where the ``gone``
    of c is recorded: "before-join", "after-join" (before the send), "after-receive", or nowhere."""
    key, late, early = moved_by_the_crashed()
    b = TraceBuilder(header("auto-split"))
    b.open("a"), b.open("b"), b.open("c")
    b.crash("c")  # E3
    if gone == "before-join":
        b.gone("c")
    b.open("d")
    if gone == "after-join":
        b.gone("c")
    receiver = late if to == "late" else early
    b.publish(key, "1:0", t0=b.t), b.receive(receiver, key, "1:0"), b.ack(receiver, "1:0")
    if gone == "after-receive":
        b.gone("c")
    b.end()
    return b


def wrong_receiver() -> str:
    """A consumer other than the owner :func:`many_crashes` delivers its first key to: a planted misassignment."""
    b = many_crashes(gone=True)
    right = next(e.consumer for e in b.events if e.op.value == "receive" and e.key == KEYS[0])
    return next(c for c in ("c0", "c1", "c2") if c != right)
