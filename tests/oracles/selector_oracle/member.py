"""How the oracle names a consumer, and how it refuses one."""

from __future__ import annotations

from typing import NamedTuple


class Member(NamedTuple):
    """One consumer connection: the name it subscribed with and the broker's ``consumerId``.

    Pulsar's ``Consumer.equals`` compares the consumer id (and the client address), so two members are the same
    consumer exactly when their ids are equal; names may repeat.
    """

    name: str
    consumer_id: int


class Refused(Exception):
    """The broker (or, for a consumer's own overlapping ranges, the client) refuses a consumer.

    ``kind`` is one of ``no-meta``, ``empty``, ``inverted``, ``own-overlap``, ``conflict`` (sticky) or
    ``no-range-left`` (auto-split): the reason, independent of the message's wording.  A conflict also names
    the consumer in the way (``culprit``), as the broker's error text does.
    """

    def __init__(self, kind: str, detail: str = "", culprit: Member | None = None) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        #: ``conflict``: the connected consumer the broker names ("Range conflict with consumer " + consumer)
        self.culprit = culprit
