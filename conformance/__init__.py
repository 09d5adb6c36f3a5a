"""The conformance suite and its pure core: traces, checkers, profiles and scenarios.

Run the suite with ``pytest -p pytest_keyshared --pyargs conformance``.
"""
