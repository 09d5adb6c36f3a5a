"""One module per ``keyshared`` subcommand; see :mod:`pytest_keyshared.cli`."""
