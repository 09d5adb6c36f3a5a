"""The conformance cases: ``pytest -p pytest_keyshared --pyargs conformance`` collects ``test_*.py`` here.

Each module is one area (built-in scenarios, Pulsar's own test catalogue, known bugs, deduplication,
replication, assignment, generated programs); each case has a stable id ``<area>/<name>`` that keys the
expectations and results files (see ``pytest_keyshared.caseid`` and ``docs/conformance.md``).
"""
