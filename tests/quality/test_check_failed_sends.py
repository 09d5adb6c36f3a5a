"""``unexpected_message`` for a message whose every send failed (``ClientDeduplicationFailureTest.testClient
DeduplicationWithBkFailure``: subscribers see exactly the messages whose send succeeded), proven both ways on the
streaming engine and the reference reading of ``docs/checker.md``."""

from __future__ import annotations

import pytest
from exemption_traces import failed_send_delivered
from reference_checker import reference_check

from conformance.checks import Kind, check_trace


@pytest.mark.parametrize("receive_first", [False, True])
def test_a_message_whose_only_send_failed_and_is_delivered_is_unexpected(receive_first: bool) -> None:
    b = failed_send_delivered(receive_first=receive_first)
    verdict = check_trace(b.events, header=b.header)
    receive = 1 if receive_first else 2
    assert [(v.kind, v.events) for v in verdict.violations] == [(Kind.UNEXPECTED_MESSAGE, (receive,))]
    assert "uid 'u1' was received but every send of it failed" in verdict.violations[0].explanation
    assert reference_check(b.header, b.events) == {("unexpected_message", None, "k", (receive,)): 1}


@pytest.mark.parametrize("then", ["ok", "info"])
def test_a_resend_that_may_have_stored_it_makes_the_delivery_expected(then: str) -> None:
    b = failed_send_delivered(then=then)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.all_violations() == () and verdict.valid, verdict.render()
    assert not reference_check(b.header, b.events)
