"""The simulated clock: timers fire in due order, time only moves when asked, background timers."""

from __future__ import annotations

import pytest

from reference_model.broker import NS_PER_MS, SimClock
from reference_model.errors import InvalidArgument, ModelStateError


def test_timers_fire_in_due_order_and_same_instant_in_scheduling_order() -> None:
    clock = SimClock()
    fired: list[tuple[str, int]] = []
    clock.call_later(20, lambda: fired.append(("b", clock.now_ms())))
    clock.call_later(10, lambda: fired.append(("a", clock.now_ms())))
    clock.call_later(20, lambda: fired.append(("c", clock.now_ms())))
    clock.advance(15)
    assert fired == [("a", 10)] and clock.now_ms() == 15
    clock.advance(100)
    assert fired == [("a", 10), ("b", 20), ("c", 20)] and clock.now_ms() == 115


def test_cancelled_timers_do_not_fire() -> None:
    clock = SimClock()
    fired: list[int] = []
    timer = clock.call_later(5, lambda: fired.append(1))
    timer.cancel()
    clock.advance(10)
    assert fired == [] and timer.cancelled


def test_advance_until_stops_when_the_condition_holds() -> None:
    clock = SimClock()
    box: list[int] = []
    clock.call_later(30, lambda: box.append(1))
    assert clock.advance_until(lambda: bool(box), 100) is True
    assert clock.now_ns() == 30 * NS_PER_MS
    assert clock.advance_until(lambda: False, 50) is False
    assert clock.now_ms() == 80


def test_advance_until_without_timeout_returns_when_nothing_can_happen() -> None:
    clock = SimClock()
    clock.call_later(1000, lambda: None, daemon=True)
    assert clock.advance_until(lambda: False, None) is False
    assert clock.now_ms() == 0  # a background timer does not keep a blocking call waiting


def test_run_until_idle_fires_chains_and_ignores_background_timers() -> None:
    clock = SimClock()
    fired: list[int] = []

    def chain(n: int) -> None:
        fired.append(n)
        if n < 3:
            clock.call_later(10, lambda: chain(n + 1))

    clock.call_later(10, lambda: chain(1))
    clock.call_later(10_000, lambda: fired.append(99), daemon=True)
    clock.run_until_idle()
    assert fired == [1, 2, 3] and clock.now_ms() == 30


def test_run_until_idle_bounded_by_max_ms() -> None:
    clock = SimClock()

    def forever() -> None:
        clock.call_later(1, forever)

    clock.call_later(1, forever)
    clock.run_until_idle(max_ms=50)
    assert clock.now_ms() == 50


def test_time_moves_forward_only_and_not_from_inside_a_timer() -> None:
    clock = SimClock()
    with pytest.raises(InvalidArgument, match="ms >= 0"):
        clock.advance(-1)
    clock.call_later(1, lambda: clock.advance(1))
    with pytest.raises(ModelStateError, match="inside a timer"):
        clock.advance(5)
