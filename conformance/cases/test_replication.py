"""Replicated-subscription cases: a consumer fails over to another cluster and must not skip what it did not
acknowledge (``replication/<name>``).

They follow ``ReplicatorSubscriptionTest`` (pulsar-semantics.md §6).  Each case is a failover scenario in
``scenarios/replication/`` (``[settings] clusters``; ``docs/scenarios.md``, "Failovers"), run like any other
scenario (``keyshared_run``; ``keyshared run --scenario <file>`` and ``keyshared replay`` run the same files)
and judged with the ordinary checker: the replication check (``skipped_after_failover``,
``replicated_cursor_ahead``, ``redelivered_after_failover``) and every delivery check on each cluster's copy of
the topic.

Clusters come from the target (``replication`` capability): a model target (``model``, ``model:classic``,
...) composes model brokers with its own version and settings (``reference_model.replication``);
``testcontainers-geo`` starts two Apache Pulsar standalones (``r1``, ``r2``) with a replicated namespace.  A case
that needs more clusters than the target has, or a delayed replication link, skips there with the reason;
elsewhere (pulsar-lite, a single broker by URL, one standalone) the cases skip with the reason.  Duplicates
after a failover are allowed by the contract only past the position the replicated cursor must have reached
(only the mark-delete position replicates, in snapshots, apache/pulsar#10054): each scenario acknowledges a
phase in full before a ``snapshot`` step, and a message of it delivered again fails the case
(``redelivered_after_failover``); later duplicates are counted in a note.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("replication")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
