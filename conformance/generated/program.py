"""Programs: scenarios built from a list of raw *moves*, so any list of moves is a valid workload.

A move is ``(kind, consumer, amount)``: three small integers.  :func:`program_from_moves` interprets the
moves in order against the program's own bookkeeping (which consumers are open, paused) and turns each into
a scenario step, dropping a move that would be invalid where it falls (closing a consumer that is not open,
resuming one that is not paused).  Two sources draw the moves:

* Hypothesis (:mod:`conformance.generated.strategies`): a list of moves, which it shrinks by deleting and
  simplifying moves; because every list is valid, every shrink candidate is a runnable program;
* a seed (:func:`program_from_seed`): ``random.Random(seed)`` draws the same shape, which is how the fixed
  programs in ``programs/`` are derived.

Every program opens ``c1`` first, so something consumes, and ends with the consumers resumed and a
``wait_quiet``; the driver's drain then delivers and acknowledges what is left.  Pure and deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import NamedTuple

from conformance.scenarios import (
    AckHeld,
    Behaviour,
    Close,
    Crash,
    KeySet,
    NackHeld,
    Open,
    Pause,
    Publish,
    Redeliver,
    Resume,
    Scenario,
    SetBehaviour,
    Settings,
    Sleep,
    Step,
    WaitQuiet,
    loads_scenario,
)

__all__ = [
    "CONSUMERS",
    "MOVE_KINDS",
    "GeneratorOptions",
    "Move",
    "program_from_moves",
    "program_from_seed",
    "stored_programs",
]

#: What a move can do; ``kind`` indexes this tuple, so repeating a kind weights it (publishes, joins and
#: leaves are what make keys move).  Order matters for shrinking: Hypothesis shrinks integers towards 0, so
#: the simplest moves come first.
MOVE_KINDS: tuple[str, ...] = (
    "publish",
    "publish",
    "publish",
    "publish",
    "open",
    "open",
    "open",
    "open",
    "wait_quiet",
    "ack_held",
    "hold",
    "ack",
    "close",
    "close",
    "nack_held",
    "redeliver",
    "pause",
    "resume",
    "nack",
    "crash",
)
#: Consumer handles a program may use; ``consumer`` indexes this tuple.
CONSUMERS: tuple[str, ...] = ("c1", "c2", "c3")
MAX_AMOUNT = 8
#: the ack timeout of consumers opened with one (``GeneratorOptions.ack_timeout``): the client's minimum
ACK_TIMEOUT_MS = 10_000


class Move(NamedTuple):
    kind: int
    consumer: int
    amount: int  #: 1..MAX_AMOUNT: messages to publish, or the count of an ``ack_held`` / ``nack_held``


#: Run settings of generated programs: short bounds, so a stalled broker costs seconds, not minutes.
PROGRAM_SETTINGS = Settings(
    receiver_queue=20,
    nack_delay_ms=100,
    drain_timeout_ms=4_000,
    quiet_ms=250,
    drain_quiet_ms=1_500,
    step_timeout_ms=3_000,
    send_timeout_ms=3_000,
)


@dataclass(frozen=True, slots=True)
class GeneratorOptions:
    """What generated programs may use.  ``crash`` needs a target that can cut a connection."""

    crash: bool = True
    #: consumers may subscribe with the client's ack timeout (10 s), and quiet waits may last past it.  Off by
    #: default: with it on, a program costs seconds more on a real broker (the model's clock is simulated).
    ack_timeout: bool = False
    keys: int = 6  #: size of the key set every publish draws from (small, so keys collide across consumers)
    settings: Settings = field(default_factory=lambda: PROGRAM_SETTINGS)


def _behaviour(amount: int) -> Behaviour:
    # holding and acknowledging consumers alike: the interesting states are keys held during joins and leaves
    return (Behaviour("hold"), Behaviour("ack"), Behaviour("hold"), Behaviour("ack"), Behaviour("nack"))[amount % 5]


def program_from_moves(
    moves: Iterable[Sequence[int]], *, name: str, options: GeneratorOptions | None = None
) -> Scenario:
    """Interpret ``moves`` into a valid scenario named ``name`` (see the module docstring)."""
    opts = options or GeneratorOptions()
    open_now: dict[str, bool] = {}  # handle -> paused
    steps: list[Step] = []

    def emit(step: Step) -> None:
        steps.append(step)

    # keys held from the start: joins must drain them (and, with the ack timeout on, a long wait sends them back)
    emit(Open(consumer="c1", behaviour=Behaviour("hold"), ack_timeout_ms=ACK_TIMEOUT_MS if opts.ack_timeout else 0))
    open_now["c1"] = False
    for raw in moves:
        kind_index, consumer_index, amount = (int(x) for x in raw)
        kind = MOVE_KINDS[kind_index % len(MOVE_KINDS)]
        handle = CONSUMERS[consumer_index % len(CONSUMERS)]
        amount = 1 + (amount - 1) % MAX_AMOUNT
        is_open = handle in open_now
        if kind == "publish":
            emit(Publish(count=amount, keys=KeySet(count=opts.keys)))
        elif kind == "open" and not is_open:
            timeout = ACK_TIMEOUT_MS if opts.ack_timeout and amount % 3 == 0 else 0
            queue = 5 if amount % 5 == 0 else None
            emit(Open(consumer=handle, behaviour=_behaviour(amount), receiver_queue=queue, ack_timeout_ms=timeout))
            open_now[handle] = False
        elif kind == "wait_quiet":
            emit(WaitQuiet())
            if opts.ack_timeout and amount % 2 == 0:
                emit(Sleep(ms=ACK_TIMEOUT_MS + 1_500))  # past the timeout: held messages come back
        elif not is_open:
            continue  # every other move needs an open consumer
        elif kind in ("hold", "ack", "nack"):
            emit(SetBehaviour(consumer=handle, behaviour=Behaviour(kind)))
        elif kind == "ack_held":
            emit(AckHeld(consumer=handle, count=amount if amount % 2 else None))
        elif kind == "nack_held":
            emit(NackHeld(consumer=handle, count=amount if amount % 2 else None))
        elif kind == "redeliver":
            emit(Redeliver(consumer=handle))
        elif kind == "close":
            emit(Close(consumer=handle))
            del open_now[handle]
        elif kind == "crash" and opts.crash:
            emit(Crash(consumer=handle))
            del open_now[handle]
        elif kind == "pause" and not open_now[handle]:
            emit(Pause(consumer=handle))
            open_now[handle] = True
        elif kind == "resume" and open_now[handle]:
            emit(Resume(consumer=handle))
            open_now[handle] = False
    # Epilogue: someone must be there to drain, and nobody may stay paused.
    if not open_now:
        emit(Open(consumer="c1"))
        open_now["c1"] = False
    for handle, paused in sorted(open_now.items()):
        if paused:
            emit(Resume(consumer=handle))
    if not any(isinstance(step, Publish) for step in steps):
        emit(Publish(count=MAX_AMOUNT, keys=KeySet(count=opts.keys)))
    emit(WaitQuiet())
    return Scenario(
        name=name,
        steps=tuple(steps),
        description="A generated program (conformance.generated): random joins, leaves, holds, acks and nacks.",
        settings=opts.settings,
        tags=("generated",),
    )


def program_from_seed(seed: int, *, length: int = 16, options: GeneratorOptions | None = None) -> Scenario:
    """The program ``random.Random(seed)`` draws: ``length`` moves, the same shape Hypothesis draws."""
    rng = random.Random(seed)
    moves = [
        Move(rng.randrange(len(MOVE_KINDS)), rng.randrange(len(CONSUMERS)), rng.randint(1, MAX_AMOUNT))
        for _ in range(length)
    ]
    return program_from_moves(moves, name=f"program-{seed:02d}", options=options)


#: Seeds of the programs stored in ``programs/`` (replayed against every target).
STORED_SEEDS: tuple[int, ...] = tuple(range(8))


def stored_programs() -> dict[str, Scenario]:
    """The fixed programs shipped in ``conformance/generated/programs/``, by name."""
    folder = resources.files("conformance.generated.programs")
    out: dict[str, Scenario] = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            scenario = loads_scenario(
                entry.read_text(encoding="utf-8"), "toml", source=f"generated program {entry.name}"
            )
            out[scenario.name] = scenario
    return out
