"""A failover of one subscription excuses nothing of another's: a message the second subscription never got on the
cluster the first one left is ``undelivered`` (it used to be left to the replication check, which judges only the
subscription that failed over, so nothing judged it).  Proven both ways, with distinct and equal timestamps."""

from __future__ import annotations

from collections import Counter

import pytest
from batch_traces import second_subscription_failover

from conformance.checks import Validity, check_trace


@pytest.mark.parametrize("step", [10, 0])
def test_the_other_subscriptions_lost_message_is_undelivered(step: int) -> None:
    bad = second_subscription_failover(dropped=True, step=step)
    verdict = check_trace(bad.events, header=bad.header)
    assert Counter((v.kind.value, v.subscription) for v in verdict.violations) == {("undelivered", "audit"): 1}
    (lost,) = verdict.violations
    assert "1:2" in lost.explanation


@pytest.mark.parametrize("step", [10, 0])
def test_the_same_run_with_every_message_delivered_is_valid(step: int) -> None:
    good = second_subscription_failover(dropped=False, step=step)
    verdict = check_trace(good.events, header=good.header)
    assert verdict.validity is Validity.VALID, verdict.render()
