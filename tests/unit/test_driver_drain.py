"""The drain and consumers the clients say are away (``driver/run.py``, ``_Run._drain``), on the model's
simulated clock: silence counts only once every open consumer is connected, and from the last moment one was
seen away; one still away at the end, with messages unacknowledged, makes the run not drained and is named in
``end``; once everything is acknowledged nobody is owed anything and the run is drained.

The model has no connections to lose, so the session here answers "away" from a script on the model's
clock.  The messages stay missing because c1 covers only part of the hash space (STICKY): a correct broker
keeps the rest for a consumer that covers them, and none comes.  The same rule on a real broker, with a
consumer cut off by the soak's proxy: ``tests/broker/test_drain_reach.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import Kind
from conformance.scenarios import KeySet, Open, Publish, Scenario, Settings, SubscriptionSettings, WaitQuiet
from pytest_keyshared.driver.run import _AWAY_EVERY_NS, RunResult, _Every, _Run
from pytest_keyshared.driver.session import PulsarSession, Session
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.base import Target

MS = 1_000_000
SETTINGS = Settings(quiet_ms=300, drain_quiet_ms=1_000, drain_timeout_ms=6_000)


def test_every_asks_once_then_again_only_after_its_period() -> None:
    now = [0]
    asked: list[int] = []

    def ask() -> list[str]:
        asked.append(now[0])
        return [f"c{len(asked)}"]

    every = _Every(ask, 100, lambda: now[0])
    assert every() == ["c1"] and asked == [0]  # the first call asks
    now[0] = 99
    assert every() == ["c1"] and asked == [0]  # within the period: the answer it has
    now[0] = 100
    assert every() == ["c2"] and asked == [0, 100]
    now[0] = 150
    assert every() == ["c2"] and asked == [0, 100]
    now[0] = 400  # a long gap: one ask, counted from now
    assert every() == ["c3"] and every() == ["c3"] and asked == [0, 100, 400]


class _Handle:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def is_connected(self) -> bool | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def test_a_real_session_counts_every_consumer_not_known_connected_as_away() -> None:
    """``True`` only is connected: ``False`` (cut off, reconnecting), ``None`` (a consumer process that cannot
    answer) and a client that raises are away; the producers do not count."""
    session = PulsarSession.__new__(PulsarSession)  # the rule only: no broker, no client
    session._producers = {"p1": (_Handle(False), "none")}  # type: ignore[dict-item]
    session._consumers = {  # type: ignore[assignment]
        "up": _Handle(True),
        "cut": _Handle(False),
        "mute": _Handle(None),
        "broken": _Handle(RuntimeError("closed")),
    }
    assert session.unreachable_consumers() == ["cut", "mute", "broken"]


def test_the_model_has_no_consumer_away(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        session = target.open_session("persistent://public/default/t", tmp_path / "run", "0", seed=0)
        assert session.unreachable_consumers() == []


class _ScriptedAway:
    """The session's answer to "who is away?", by the model's clock: ``c1`` until ``until_ns`` after the drain
    started (None: for good); every question's time is kept."""

    def __init__(self, session: Session, away_ms: int | None) -> None:
        self.session = session
        self.away_ms = away_ms
        self.drain_started: int | None = None
        self.asked: list[int] = []

    def __call__(self) -> list[str]:
        now = self.session.scheduler.now_ns()
        self.asked.append(now)
        assert self.drain_started is not None, "asked before the drain"
        if self.away_ms is None or now < self.drain_started + self.away_ms * MS:
            return ["c1"]
        return []


class _Drain(_Run):
    """A Key_Shared run on the model whose session answers "away" from a script; the drain's times kept."""

    away: _ScriptedAway
    away_ms: int | None = None
    drain_span: tuple[int, int] = (0, 0)

    def _open_session(self) -> Session:
        session = super()._open_session()
        self.away = _ScriptedAway(session, self.away_ms)
        session.unreachable_consumers = self.away  # type: ignore[method-assign]
        return session

    def _drain(self) -> bool:
        started = self.scheduler.now_ns()
        self.away.drain_started = started
        try:
            return super()._drain()
        finally:
            self.drain_span = (started, self.scheduler.now_ns())


def _scenario(*, covered: bool) -> Scenario:
    """c1 holds, then acks in the drain; it covers every hash (``covered``) or only a quarter of them."""
    end = 65535 if covered else 16383
    return Scenario(
        name="drain-away",
        subscription=SubscriptionSettings(mode="STICKY"),
        steps=(Open(consumer="c1", ranges=((0, end),)), Publish(count=40, keys=KeySet(count=40)), WaitQuiet()),
        settings=SETTINGS,
    )


@pytest.fixture
def drain(tmp_path: Path) -> Iterator[Callable[..., tuple[_Drain, RunResult]]]:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:

        def run(*, away_ms: int | None, covered: bool = False) -> tuple[_Drain, RunResult]:
            return _run(target, tmp_path / f"run-{away_ms}-{covered}", away_ms=away_ms, covered=covered)

        yield run


def _run(target: Target, out: Path, *, away_ms: int | None, covered: bool) -> tuple[_Drain, RunResult]:
    run = _Drain(target, _scenario(covered=covered), seed=0, out_dir=out, profile=None, live_check=False, progress=None)
    run.away_ms = away_ms
    return run, run.execute()


def _end(result: RunResult) -> dict[str, Any]:
    end = json.loads(result.trace_path.read_text().splitlines()[-1])
    assert end["op"] == "end"
    return end  # type: ignore[no-any-return]


def _drain_ms(run: _Drain) -> float:
    return (run.drain_span[1] - run.drain_span[0]) / MS


def test_with_every_consumer_connected_the_drain_gives_up_on_silence(drain: Any) -> None:
    run, result = drain(away_ms=0)
    assert result.counters.acked_expected < result.counters.expected_uids  # messages are missing
    assert result.drained and result.quiet
    end = _end(result)
    assert end["drained"] is True and "unreachable" not in end
    assert SETTINGS.drain_quiet_ms <= _drain_ms(run) < SETTINGS.drain_quiet_ms + 50
    assert len(run.away.asked) == 1  # asked once the silence was long enough, and not again
    assert Kind.UNDELIVERED not in result.verdict.unjudged


def test_the_drain_waits_for_a_consumer_that_comes_back_and_counts_the_silence_from_then(drain: Any) -> None:
    run, result = drain(away_ms=2_600)
    assert result.drained and result.quiet and "unreachable" not in _end(result)
    # the silence counts from c1's return (seen at most one asking period late), not from the last receive
    took = _drain_ms(run)
    assert 2_600 + SETTINGS.drain_quiet_ms <= took <= 2_600 + SETTINGS.drain_quiet_ms + _AWAY_EVERY_NS / MS
    gaps = [b - a for a, b in zip(run.away.asked, run.away.asked[1:], strict=False)]
    assert gaps and min(gaps) >= _AWAY_EVERY_NS  # asked at most once per period while it waited


def test_a_consumer_away_to_the_end_makes_the_run_not_drained_and_is_named(drain: Any) -> None:
    run, result = drain(away_ms=None)
    assert not result.drained and not result.quiet
    assert _drain_ms(run) == pytest.approx(SETTINGS.drain_timeout_ms, abs=5)  # the bound, not a hang
    end = _end(result)
    assert end["drained"] is False and end["unreachable"] == ["c1"] and end["acked"] < end["expected"]
    drain_step = result.steps[-1]
    assert drain_step.do == "drain" and not drain_step.ok
    assert "consumer 'c1' not connected when the 6000 ms drain bound expired" in drain_step.note
    assert any("could not reach consumer 'c1'" in note for note in result.notes), result.notes
    assert Kind.UNDELIVERED in result.verdict.unjudged and "undelivered" not in result.violation_kinds()


def test_once_everything_is_acknowledged_a_consumer_away_does_not_matter(drain: Any) -> None:
    run, result = drain(away_ms=None, covered=True)
    assert result.counters.acked_expected == result.counters.expected_uids == 40
    assert result.drained and result.quiet
    end = _end(result)
    assert end["drained"] is True and "unreachable" not in end
    assert run.away.asked == []  # nothing was owed: nobody asked who is away
    assert result.verdict.valid


def test_the_drain_waits_for_a_second_copy_a_resend_stored(tmp_path: Path) -> None:
    """Generated program 127 (``docs/generated-findings/drain-duplicate-copy-undelivered.toml``): deduplication
    off, a producer's resend stores a second copy of p1:14..p1:18 under new ids, and c1 nacks four of them after
    the first copies were acknowledged.  The drain once counted uids: every uid was acknowledged, so it ended
    before the nack delay brought the copies back, and the checker (which counts message ids) found them
    undelivered.  It waits for each stored copy now."""
    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.run import run_scenario

    path = Path(__file__).parents[2] / "docs" / "generated-findings" / "drain-duplicate-copy-undelivered.toml"
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, load_scenario(path), seed=127, out_dir=tmp_path / "run")
    events = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()[1:]]
    ids: dict[str, set[str]] = {}
    for e in events:
        if e["op"] == "publish" and e.get("result") == "ok":
            ids.setdefault(e["uid"], set()).add(e["msg_id"])
    copies = {m for found in ids.values() if len(found) > 1 for m in found}
    assert len(copies) >= 2, "the resend stored no second copy: the program no longer takes the shape"
    acked = {e["msg_id"] for e in events if e["op"] == "ack"}
    assert copies <= acked, f"copies never acknowledged: {sorted(copies - acked)}"
    assert result.verdict.valid, result.verdict.summary()
