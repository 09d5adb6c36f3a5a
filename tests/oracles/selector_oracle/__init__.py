"""An independent implementation of Apache Pulsar's Key_Shared selectors, for the tests only.

The reference model (``reference_model.selectors``) decides which consumer owns a key; the checker's
``misassigned`` rule and the assignment cases ask that same code, so a selector bug in the model would move the
oracle with it.  This package is a second implementation, written again from Pulsar's source as each release line
reads (``ConsistentHashingStickyKeyConsumerSelector``, ``HashRangeAutoSplitStickyKeyConsumerSelector``,
``HashRangeExclusiveStickyKeyConsumerSelector``, ``ConsumerNameIndexTracker``, ``ConsumerHashAssignmentsSnapshot``,
``StickyKeyConsumerSelectorUtils``), with its own hashing and its own release table.  It imports nothing from
``reference_model`` (``tests/oracles/test_selector_oracle_independence.py`` asserts it) and is written for
plainness, not speed: Java's ``TreeMap`` is a sorted list with ``bisect``, every rule is a short function.

    >>> sel = oracle_selector("consistent-hashing", "4.0.7", points=3)
    >>> sel.add(Member("consumer1", 1)); sel.add(Member("consumer2", 2)); sel.add(Member("consumer3", 3))
    >>> sel.stats_ranges()[Member("consumer1", 1)]
    [(14359, 18366), (29991, 39817), (52980, 60442)]

``tests/oracles/test_selector_oracle_differential.py`` drives it and the model through the same random
memberships at every release era and demands the same answers (docs/selectors.md, "The independent oracle").
"""

from __future__ import annotations

from selector_oracle.eras import ERA_RELEASES, Era, era_of
from selector_oracle.factory import OracleSelector, oracle_selector
from selector_oracle.hashing import java_hash, slot_for
from selector_oracle.member import Member, Refused

__all__ = [
    "ERA_RELEASES",
    "Era",
    "Member",
    "OracleSelector",
    "Refused",
    "era_of",
    "java_hash",
    "oracle_selector",
    "slot_for",
]
