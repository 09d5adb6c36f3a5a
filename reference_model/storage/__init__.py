"""Storage of a topic, as Apache Pulsar's managed ledger keeps it: positions, entries, the log, cursors.

Public surface only; each name lives in the module named after the concept it models.
"""

from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage
from reference_model.storage.position import Position, format_position
from reference_model.storage.topic_log import TopicLog

__all__ = [
    "Entry",
    "ManagedCursor",
    "MessageMetadata",
    "Position",
    "SingleMessage",
    "TopicLog",
    "format_position",
]
