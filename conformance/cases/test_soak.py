"""The soak case, ``soak/churn-and-faults``: collected only with ``--keyshared-soak=DURATION`` (off by default, so
the conformance run stays short).

A seeded random workload with consumer churn and every fault the target can take (broker restarts where the
target owns its broker, network faults on single clients where it is reached over TCP), for the duration given;
then a bounded drain and the full check of the trace chunks (``docs/soak.md``).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.soak import FAULT_KINDS, NET_FAULTS


@pytest.mark.keyshared_contract("ordering", "key-exclusivity", "delivery", "redelivery")
def test_churn_and_faults(
    keyshared_settings: Any, keyshared_target: Any, keyshared_soak: Any, keyshared_check: Any
) -> None:
    duration = keyshared_settings.value("soak")
    if duration is None:
        pytest.skip("the soak case runs with --keyshared-soak=DURATION (e.g. 2m)")
    capabilities = keyshared_target.capabilities
    faults = tuple(
        kind
        for kind in FAULT_KINDS
        if (kind == "restart" and capabilities.broker_restart)
        or (kind in NET_FAULTS and not keyshared_target.deterministic)  # a broker reached over TCP: not the model
    )
    result = keyshared_soak(duration, churn_per_min=12, faults=faults)
    keyshared_check(result)
