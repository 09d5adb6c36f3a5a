"""Soak runs as plain data: the plan (:mod:`.plan`) and the seeded step generator (:mod:`.generator`).

The driver side (running the steps, the nemesis, the chunked trace) is ``pytest_keyshared.soak``.
"""

from conformance.soak.generator import PRODUCERS_CLIENT, NetFault, SoakGenerator, Timed
from conformance.soak.plan import (
    BEHAVIOUR_LABELS,
    FAULT_KINDS,
    NET_FAULTS,
    PUBLISH_MODES,
    SoakPlan,
    parse_duration,
    parse_faults,
    parse_key_distribution,
)

__all__ = [
    "BEHAVIOUR_LABELS",
    "FAULT_KINDS",
    "NET_FAULTS",
    "PRODUCERS_CLIENT",
    "PUBLISH_MODES",
    "NetFault",
    "SoakGenerator",
    "SoakPlan",
    "Timed",
    "parse_duration",
    "parse_faults",
    "parse_key_distribution",
]
