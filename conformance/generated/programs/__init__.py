"""The fixed generated programs replayed against real targets (``program-NN.toml``).

Written by ``python -m conformance.generated.regenerate``; a test checks they match what the generator
derives from their seeds, so the files and the generator cannot drift apart.  A package so the files are
installed with ``conformance``.
"""
