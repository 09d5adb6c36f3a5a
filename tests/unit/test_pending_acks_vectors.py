"""``PendingAcksMapTest``'s ``removeAllUpTo`` methods, pinned against the model's ``PendingAcks``.

Read at ``Release 4.2.2`` (ascentstream/pulsar 0bd2b6e669; the same methods at ``Release 4.0.11``): apache/pulsar#25581
gave ``removeAllUpTo`` a callback invoked for each removed entry with ``(ledgerId, entryId, batchSize,
stickyKeyHash)`` (``removeAllUpToWithCallback_InvokesCallbackForEachRemovedEntry``), which ``Consumer`` uses to
lower its unacked counter. ``PendingAcks.remove_all_up_to`` returns those records in the same order and lowers
``unacked_messages`` (the model's counter is the map's sum on every release; see docs/model.md §1 on #25581).
"""

from __future__ import annotations

import pytest

from reference_model.keyshared.pending_acks import PendingAcks
from reference_model.storage.position import Position

#: (method, added entries (ledger, entry, batch size, hash), mark-delete position, removed records, kept positions)
VECTORS = [
    (
        "removeAllUpTo_RemovesAllPendingAcksUpToSpecifiedEntry",
        [(1, 1, 1, 123), (1, 2, 1, 124), (2, 1, 1, 125)],
        (1, 2),
        [(1, 1, 1, 123), (1, 2, 1, 124)],
        [(2, 1)],
    ),
    (
        "removeAllUpTo_RemovesAllPendingAcksUpToSpecifiedEntryAcrossMultipleLedgers",
        [(1, 1, 1, 123), (1, 2, 1, 124), (2, 1, 1, 125), (2, 2, 1, 126), (3, 1, 1, 127)],
        (2, 1),
        [(1, 1, 1, 123), (1, 2, 1, 124), (2, 1, 1, 125)],
        [(2, 2), (3, 1)],
    ),
    (
        "removeAllUpToWithCallback_InvokesCallbackForEachRemovedEntry",  # from 4.0.11 / 4.2.2 (#25581)
        [(1, 1, 3, 123), (1, 2, 5, 124), (2, 1, 7, 125)],
        (1, 2),
        [(1, 1, 3, 123), (1, 2, 5, 124)],
        [(2, 1)],
    ),
]


@pytest.mark.parametrize(("method", "added", "up_to", "removed", "kept"), VECTORS, ids=[v[0] for v in VECTORS])
def test_remove_all_up_to_matches_pending_acks_map_test(
    method: str,
    added: list[tuple[int, int, int, int]],
    up_to: tuple[int, int],
    removed: list[tuple[int, int, int, int]],
    kept: list[tuple[int, int]],
) -> None:
    acks = PendingAcks()
    for ledger, entry, batch_size, slot in added:
        assert acks.add_if_allowed(Position(ledger, entry), batch_size, slot)
    records = acks.remove_all_up_to(Position(*up_to))
    assert [(p.ledger_id, p.entry_id, b, s) for p, b, s in records] == removed
    for ledger, entry, *_ in removed:
        assert Position(ledger, entry) not in acks
    assert [(p.ledger_id, p.entry_id) for p, _b, _s in acks] == kept
    # #25581: the counter follows the removal (the callback's batch sizes)
    assert acks.unacked_messages == sum(b for _l, _e, b, _s in added) - sum(b for _l, _e, b, _s in removed)
