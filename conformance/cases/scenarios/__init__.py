"""Scenario files of the conformance cases, one folder per area.

Each file is a scenario in the format of ``docs/scenarios.md``; its ``tags`` carry the case's metadata:
``contract:<name>`` (the contracts the case checks) and ``requires:<capability>`` (what the target must
support).  ``keyshared replay conformance/cases/scenarios/<area>/<name>.toml`` runs one by hand.
"""
