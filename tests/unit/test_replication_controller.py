"""The snapshot protocol of ``ReplicatedSubscriptionsController`` / ``...SnapshotBuilder``, without brokers."""

from __future__ import annotations

import pytest

from reference_model.errors import InvalidArgument
from reference_model.replication import (
    AcknowledgeTo,
    MarkerType,
    ReplicatedSnapshot,
    ReplicatedSubscriptionsController,
    ReplicationConfig,
    SnapshotBuilder,
    snapshot_from_payload,
)
from reference_model.replication.markers import (
    message_id,
    parse_message_id,
    snapshot_response,
    subscription_update,
)

MS = 1_000_000
RESPONSE = MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE


def response_payload(snapshot_id: str, cluster: str, position: tuple[int, int]) -> dict:
    return dict(snapshot_response(snapshot_id, "r1", cluster, position).payload)


def start(controller: ReplicatedSubscriptionsController, now_ms: int, remotes=("r2",), data_ms: int = 0):
    return controller.tick(
        now_ms * MS, last_data_write_ns=data_ms * MS, remote_clusters=list(remotes), all_replicators_connected=True
    )


def test_two_clusters_one_round() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    request = start(controller, 1000)
    assert request is not None
    assert request.marker_type is MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST
    assert dict(request.payload) == {"snapshot_id": "r1-1", "source_cluster": "r1"}
    assert request.replicate_to is None
    done = controller.received_marker((5, 9), RESPONSE, response_payload("r1-1", "r2", (7, 3)))
    assert done is not None and done.marker_type is MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT
    assert done.replicate_to == ("r1",)
    snapshot = snapshot_from_payload(done.payload)
    assert snapshot == ReplicatedSnapshot("r1-1", (5, 9), (("r2", (7, 3)),))
    assert controller.pending == {} and controller.last_completed_snapshot_id == "r1-1"
    assert controller.last_completed_start_ns == 1000 * MS


def test_three_clusters_need_a_second_round_positions_from_the_first() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    start(controller, 0, remotes=("r3", "r2"))
    assert controller.received_marker((1, 1), RESPONSE, response_payload("r1-1", "r2", (2, 5))) is None
    # The first response per cluster wins, even within round one.
    assert controller.received_marker((1, 2), RESPONSE, response_payload("r1-1", "r2", (2, 6))) is None
    second = controller.received_marker((1, 3), RESPONSE, response_payload("r1-1", "r3", (3, 5)))
    assert second is not None and second.marker_type is MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST
    assert dict(second.payload) == {"snapshot_id": "r1-1", "source_cluster": "r1"}
    assert controller.requests_written == 2
    assert controller.received_marker((1, 7), RESPONSE, response_payload("r1-1", "r3", (3, 9))) is None
    done = controller.received_marker((1, 8), RESPONSE, response_payload("r1-1", "r2", (2, 9)))
    assert done is not None
    assert snapshot_from_payload(done.payload) == ReplicatedSnapshot("r1-1", (1, 8), (("r2", (2, 5)), ("r3", (3, 5))))


def test_builder_rounds() -> None:
    builder = SnapshotBuilder("s", "r1", ["r2"], start_ns=0, timeout_ms=10)
    assert not builder.needs_two_rounds
    assert builder.received_response((0, 1), "r2", (0, 0)).completed
    assert not builder.is_timed_out(10 * MS)
    assert builder.is_timed_out(10 * MS + 1)
    assert "SnapshotBuilder('s'" in repr(builder)


def test_skip_when_no_data_since_last_completed_snapshot() -> None:
    """``testReplicationSnapshotStopWhenNoTraffic``: no data -> no new request; markers are not data."""
    controller = ReplicatedSubscriptionsController("r1", "t")
    assert controller.tick(0, last_data_write_ns=None, remote_clusters=["r2"], all_replicators_connected=True) is None
    start(controller, 1000, data_ms=500)
    controller.received_marker((0, 2), RESPONSE, response_payload("r1-1", "r2", (0, 0)))
    assert start(controller, 2000, data_ms=500) is None  # last data before the completed snapshot started
    assert start(controller, 3000, data_ms=1000) is not None  # same instant as the start counts as new
    assert controller.requests_written == 2


def test_skip_when_a_replicator_is_disconnected() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    assert controller.tick(0, last_data_write_ns=0, remote_clusters=["r2"], all_replicators_connected=False) is None
    assert controller.tick(0, last_data_write_ns=0, remote_clusters=[], all_replicators_connected=True) is None
    assert controller.requests_written == 0


def test_one_way_no_retry_until_timeout() -> None:
    """``testReplicatedSubscriptionOneWay`` (#23839): 1 pending snapshot, 1 request until the timeout."""
    controller = ReplicatedSubscriptionsController("r1", "t", config=ReplicationConfig(snapshot_timeout_ms=30_000))
    for second in range(31):
        start(controller, second * 1000)
    assert len(controller.pending) == 1 and controller.requests_written == 1
    start(controller, 31_000)  # the first request timed out at 30 s + 1 ns; dropped, then a new one
    assert controller.snapshots_timed_out == 1
    assert list(controller.pending) == ["r1-2"] and controller.requests_written == 2


def test_before_23839_a_request_every_tick() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t", version="3.0.9")
    for second in range(5):
        start(controller, second * 1000)
    assert controller.requests_written == 5 and len(controller.pending) == 5


def test_after_a_completed_snapshot_pending_ones_do_not_block() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    start(controller, 0)
    controller.received_marker((0, 1), RESPONSE, response_payload("r1-1", "r2", (0, 0)))
    start(controller, 1000, data_ms=1000)
    start(controller, 2000, data_ms=2000)  # r1-2 still pending; a completed snapshot exists, so r1-3 starts
    assert sorted(controller.pending) == ["r1-2", "r1-3"]


def test_late_response_to_timed_out_snapshot_is_ignored() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t", config=ReplicationConfig(snapshot_timeout_ms=1000))
    start(controller, 0)
    start(controller, 1001)  # times out r1-1; #23839 no longer blocks (nothing pending), so r1-2 starts
    assert list(controller.pending) == ["r1-2"]
    assert controller.received_marker((0, 5), RESPONSE, response_payload("r1-1", "r2", (0, 1))) is None
    assert controller.snapshots_completed == 0


def test_request_is_answered_with_its_local_position() -> None:
    controller = ReplicatedSubscriptionsController("r2", "t")
    answer = controller.received_marker(
        (4, 2), MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST, {"snapshot_id": "r1-7", "source_cluster": "r1"}
    )
    assert answer is not None and answer.marker_type is RESPONSE
    assert answer.replicate_to == ("r1",)
    assert dict(answer.payload) == {
        "snapshot_id": "r1-7",
        "cluster": {"cluster": "r2", "message_id": {"ledger_id": 4, "entry_id": 2}},
    }


def test_update_moves_listed_subscription() -> None:
    controller = ReplicatedSubscriptionsController("r2", "t")
    update = subscription_update("sub", [("r3", (1, 1)), ("r2", (4, 6))])
    assert dict(update.payload)["clusters"][0]["cluster"] == "r2"  # clusters sorted by name
    action = controller.received_marker((9, 9), update.marker_type, update.payload)
    assert action == AcknowledgeTo("sub", (4, 6))
    other = subscription_update("sub", [("r3", (1, 1))])
    assert controller.received_marker((9, 9), other.marker_type, other.payload) is None
    assert controller.received_marker((9, 9), MarkerType.TXN_COMMIT, {}) is None


def test_local_subscription_updated_writes_update_for_remotes() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    write = controller.local_subscription_updated("sub", ReplicatedSnapshot("r1-1", (0, 9), (("r2", (3, 4)),)))
    assert write.marker_type is MarkerType.REPLICATED_SUBSCRIPTION_UPDATE and write.replicate_to is None
    assert dict(write.payload) == {
        "subscription_name": "sub",
        "clusters": [{"cluster": "r2", "message_id": {"ledger_id": 3, "entry_id": 4}}],
    }


def test_stats_and_repr() -> None:
    controller = ReplicatedSubscriptionsController("r1", "t")
    start(controller, 0)
    assert controller.stats()["pendingSnapshots"] == ["r1-1"]
    assert "pending=['r1-1']" in repr(controller)


def test_message_ids() -> None:
    assert parse_message_id(message_id((3, 4))) == (3, 4)
    with pytest.raises(InvalidArgument, match="ledger_id"):
        parse_message_id({"ledger": 3})
    with pytest.raises(InvalidArgument, match="snapshot marker payload"):
        snapshot_from_payload({"clusters": []})
    assert ReplicatedSnapshot("s", (0, 1), (("r2", (5, 5)),)).position_in("r3") is None


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"enabled": "yes"}, "enabled='yes'"),
        ({"snapshot_frequency_ms": 0}, "snapshot_frequency_ms=0"),
        ({"snapshot_timeout_ms": 1.5}, "snapshot_timeout_ms=1.5"),
        ({"max_cached_snapshots": 0}, "max_cached_snapshots=0"),
        ({"replication_delay_ms": -1}, "replication_delay_ms=-1"),
    ],
)
def test_invalid_replication_config(kwargs, fragment) -> None:
    with pytest.raises(InvalidArgument) as info:
        ReplicationConfig(**kwargs)
    assert fragment in str(info.value)
