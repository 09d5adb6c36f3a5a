"""Deduplication epochs on the Spark engine (``conformance.checks.epochs``, run inside its tasks by the streaming
checker): the traces of ``tests/support/epoch_traces.py`` in one job, split in two parts, with the Python engine's
verdicts: a producer forgotten by a proven purge and a deduplication switch-on start its next epoch (valid), a
purge not made is ``not_purged``, a resend dropped in the new epoch ``lost_write``, a switch-on that forgot too much
``last_sequence_id_behind`` and ``duplicate_publish``, a purge every quarter of the timeout ``purge_off_schedule``;
an unproven inactivity (equal timestamps) keeps one epoch."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from epoch_traces import probed, purged, switched

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark


def test_both_engines_judge_deduplication_epochs_alike(spark: Any) -> None:
    flat = purged()
    flat_events = [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in flat.events]
    cases = [
        ("purged", purged().header, purged().events, []),
        ("not purged", purged(answer=2, resend="-1:-1").header, purged(answer=2, resend="-1:-1").events,
         ["lost_write", "not_purged"]),
        ("purged, equal t", flat.header, flat_events, ["duplicate_publish", "last_sequence_id_behind"]),
        ("switched", switched().header, switched().events, []),
        ("switch forgot", switched(answer=-1, resend="1:6").header, switched(answer=-1, resend="1:6").events,
         ["duplicate_publish", "last_sequence_id_behind"]),
        ("every 20 s", probed(20, 7).header, probed(20, 7).events, []),
        ("every 15 s", probed(15, 7).header, probed(15, 7).events, ["purge_off_schedule"]),
    ]  # fmt: skip
    verdicts = check_many(spark, [(header, events) for _, header, events, _k in cases], parts=2)
    for (name, header, events, kinds), verdict in zip(cases, verdicts, strict=True):
        assert verdict.identities() == check_trace(events, header=header).identities(), name
        assert sorted(v.kind.value for v in verdict.violations) == kinds, name
