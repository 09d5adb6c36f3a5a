"""Start a child process that Ctrl-C can reach, whatever this process inherited.

A shell that runs a job in the background without job control starts it with SIGINT ignored, and an ignored
signal stays ignored across ``exec``; Python installs its ``KeyboardInterrupt`` handler only where SIGINT is
not ignored.  Run so, the CLI's Ctrl-C path (exit 130, a complete trace) never runs and a test of it fails for
a reason that is not the product's.  The tests that send SIGINT therefore start their child with SIGINT's
default disposition, as a terminal's foreground job has it.  (The program itself keeps an inherited ignore:
that is what a user who backgrounds it asks for.)
"""

from __future__ import annotations

import signal

__all__ = ["sigint_as_at_a_terminal"]


def sigint_as_at_a_terminal() -> None:
    """``preexec_fn`` for :class:`subprocess.Popen`: SIGINT back to its default in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
