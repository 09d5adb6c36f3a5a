"""Topic stats and internal stats under Apache Pulsar's JSON field names, so a real broker's answer can be
compared with the model's field by field.

Follows ``TopicStatsImpl``, ``SubscriptionStatsImpl``, ``ConsumerStatsImpl`` (4.0: ``drainingHashes*``,
``keyHashRangeArrays``; classic: ``readPositionWhenJoining``, ``keyHashRanges`` strings,
``consumersAfterMarkDeletePosition``) and ``PersistentTopicInternalStats``. Rates are 0.0: the model has no
rate windows. ``msgBacklog`` counts entries, as Pulsar does without ``getPreciseBacklog``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_model.broker.subscription import ServerSubscription
from reference_model.broker.topic import ServerTopic
from reference_model.keyshared import KeySharedDispatcher
from reference_model.storage.position import format_position

if TYPE_CHECKING:
    from reference_model.broker.model_broker import ModelBroker

__all__ = ["internal_stats", "subscription_stats", "topic_stats"]


def _consumer_stats(dispatcher: KeySharedDispatcher, ranges: dict[int, list[tuple[int, int]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    classic = dispatcher.implementation == "classic"
    for consumer in dispatcher.consumers.values():
        stats: dict[str, Any] = {
            "consumerName": consumer.name,
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "msgRateRedeliver": 0.0,
            "msgOutCounter": consumer.msg_out_counter,
            "availablePermits": consumer.permits,
            "unackedMessages": consumer.unacked_messages,
            "avgMessagesPerEntry": consumer.avg_messages_per_entry,
            "blockedConsumerOnUnackedMsgs": consumer.blocked_on_unacked,
            "metadata": {},
        }
        stats.update(dispatcher.consumer_stats(consumer))
        consumer_ranges = ranges.get(consumer.consumer_id, [])
        if classic:
            stats["keyHashRanges"] = [f"[{start}, {end}]" for start, end in consumer_ranges]
        else:
            stats["keyHashRangeArrays"] = [[start, end] for start, end in consumer_ranges]
        out.append(stats)
    return out


def subscription_stats(sub: ServerSubscription) -> dict[str, Any]:
    """``SubscriptionStatsImpl`` of one subscription."""
    dispatcher = sub.dispatcher
    cursor = sub.cursor
    stats: dict[str, Any] = {
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgRateRedeliver": 0.0,
        "msgBacklog": cursor.backlog(),
        "msgBacklogNoDelayed": cursor.backlog(),
        "msgDelayed": 0,
        "type": "Key_Shared",
        "isDurable": True,
        "isReplicated": sub.replicated,
        "nonContiguousDeletedMessagesRanges": len(cursor.deleted_ranges()),
        "consumers": [],
        "unackedMessages": 0,
        "msgInReplay": 0,
        "blockedSubscriptionOnUnackedMsgs": False,
        "consumersAfterMarkDeletePosition": {},
        "drainingHashesCount": 0,
        "drainingHashesClearedTotal": 0,
        "drainingHashesUnackedMessages": 0,
    }
    if dispatcher is not None:
        stats.update(
            {
                "keySharedMode": dispatcher.policy.mode,
                "allowOutOfOrderDelivery": dispatcher.allow_out_of_order,
                "unackedMessages": dispatcher.total_unacked,
                "msgInReplay": len(dispatcher.replay),
                "blockedSubscriptionOnUnackedMsgs": dispatcher.blocked_on_unacked,
                "msgOutCounter": sum(c.msg_out_counter for c in dispatcher.consumers.values()),
            }
        )
        stats.update(dispatcher.subscription_stats())
        stats["consumers"] = _consumer_stats(dispatcher, dispatcher.key_hash_ranges())
    return stats


def topic_stats(broker: ModelBroker, topic: ServerTopic) -> dict[str, Any]:
    """``TopicStatsImpl`` of one topic."""
    subscriptions = {name: subscription_stats(sub) for name, sub in topic.subscriptions.items()}
    storage = sum(sum(len(m.payload) for m in e.messages) for e in topic.log)
    return {
        "msgRateIn": 0.0,
        "msgThroughputIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgInCounter": topic.msg_in_counter,
        "bytesInCounter": topic.bytes_in_counter,
        "msgOutCounter": sum(s.get("msgOutCounter", 0) for s in subscriptions.values()),
        "averageMsgSize": (topic.bytes_in_counter / topic.msg_in_counter) if topic.msg_in_counter else 0.0,
        "storageSize": storage,
        "publishers": [
            {"producerName": name, "producerId": producer_id, "msgRateIn": 0.0, "msgThroughputIn": 0.0}
            for name, producer_id in topic.connected_producers.items()
        ],
        "subscriptions": subscriptions,
        "replication": {},
        "deduplicationStatus": topic.dedup.status,
        "nonContiguousDeletedMessagesRanges": sum(
            s["nonContiguousDeletedMessagesRanges"] for s in subscriptions.values()
        ),
    }


def internal_stats(topic: ServerTopic) -> dict[str, Any]:
    """``PersistentTopicInternalStats``: entries, ledgers, and every cursor's positions and ack holes."""
    log = topic.log
    ledgers: dict[int, int] = {}
    for entry in log:
        ledgers[entry.position.ledger_id] = ledgers.get(entry.position.ledger_id, 0) + 1
    ledgers.setdefault(log.current_ledger_id, 0)
    cursors: dict[str, Any] = {}
    for name, sub in topic.subscriptions.items():
        cursor = sub.cursor
        cursors[name] = {
            "markDeletePosition": format_position(cursor.mark_delete_position),
            "readPosition": format_position(cursor.read_position),
            "individuallyDeletedMessages": cursor.format_deleted_ranges(),
            "numberOfEntriesSinceFirstNotAckedMessage": cursor.entries_since_first_not_acked(),
            "totalNonContiguousDeletedMessagesRange": len(cursor.deleted_ranges()),
            "properties": {},
        }
    snapshot = topic.dedup.snapshot()
    if snapshot.exists and snapshot.position is not None:
        cursors["pulsar.dedup"] = {
            "markDeletePosition": format_position(snapshot.position),
            "readPosition": "",
            "individuallyDeletedMessages": "[]",
            "properties": dict(snapshot.sequence_ids),
        }
    return {
        "entriesAddedCounter": len(log),
        "numberOfEntries": len(log),
        "lastConfirmedEntry": format_position(log.latest),
        "ledgers": [{"ledgerId": ledger_id, "entries": n} for ledger_id, n in sorted(ledgers.items())],
        "cursors": cursors,
    }
