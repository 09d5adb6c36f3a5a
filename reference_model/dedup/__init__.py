"""Broker-side producer deduplication (``MessageDeduplication``) and the client rules it depends on.

Public surface only; each name lives in the module named after the concept it models.
"""

from reference_model.dedup.client_batching import (
    CLIENTS,
    SendIds,
    batch_send_ids,
    client_last_sequence_id,
    key_based_batches,
    python_batch_send_ids,
    python_explicit_sequence_id,
)
from reference_model.dedup.config import DEDUP_CURSOR_NAME, DedupConfig
from reference_model.dedup.decision import DUPLICATE_RECEIPT, DedupDecision, DedupSnapshot, DedupStatus
from reference_model.dedup.deduplication import MessageDeduplication
from reference_model.dedup.policy import effective_deduplication, is_system_topic

__all__ = [
    "CLIENTS",
    "DEDUP_CURSOR_NAME",
    "DUPLICATE_RECEIPT",
    "DedupConfig",
    "DedupDecision",
    "DedupSnapshot",
    "DedupStatus",
    "MessageDeduplication",
    "SendIds",
    "batch_send_ids",
    "client_last_sequence_id",
    "effective_deduplication",
    "is_system_topic",
    "key_based_batches",
    "python_batch_send_ids",
    "python_explicit_sequence_id",
]
