"""Apache Pulsar's fix history of the known-bug cases (``known-bugs/<issue>-<name>``), as data.

For each case: the issue, the PR that fixed it, the implementation that has the bug (``classic`` for bugs of
the pre-PIP-379 dispatcher, ``any`` for selector bugs), and per release line the first release that carried
the fix (``None``: the line never got it).  ``docs/known-bugs.md`` is generated from this table and from runs of
each case against the reference model at each line's first patch, the last patch before the fix and the fix
release (``python -m pytest_keyshared.known_bugs_matrix``); a test keeps the page current and asserts that the
model agrees with the history wherever :attr:`KnownBug.shown` says it can.

Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_model.versions import (
    CLASSIC_RECENTLY_JOINED_SORTED,
    CLASSIC_REPLAY_PRECEDENCE_AFTER_READ,
    CLASSIC_UNSELECTED_TO_REPLAY,
    CONSISTENT_HASHING_NAME_INDEX,
    CONSISTENT_HASHING_NUL_SEPARATOR,
    NO_KEY_FALLBACK,
    PIP_379,
    REWIND_BEFORE_REPLAY_READ,
    STICKY_GAP_FIX,
    Fix,
    ProposedFix,
    PulsarVersion,
    parse_version,
)

__all__ = ["KNOWN_BUGS", "KnownBug"]


@dataclass(frozen=True, slots=True)
class KnownBug:
    """One known bug and where Pulsar fixed it.

    ``fixed_in`` maps a release line (``"3.0"``) to the first release of it with the fix, or ``None`` when that
    line never got it (fixed only by a later line, e.g. by PIP-379 in 4.0); empty when nothing was fixed.
    ``implementation`` is ``classic`` for bugs of the classic dispatcher (4.x releases run it too, as
    ``subscriptionKeySharedUseClassicPersistentImplementation=true`` does; a bug fixed only by PIP-379 runs
    with the 4.0 default at its fix release, 4.0.0), else ``default``.  ``shown`` is ``None`` when the model
    shows the bug on the releases before the fix, else why it does not (a race, a release older than the
    model, not a confirmed bug).
    """

    case: str
    issue: str
    fix: str
    fixed_in: dict[str, str | None]
    implementation: str = "default"
    shown: str | None = None
    gate: Fix | None = None  #: the model's gate for the fix (reference_model.versions), when the model has one
    #: open in Apache Pulsar: no release has a fix, so every release running ``implementation`` has the bug
    unfixed: bool = False
    #: an open bug's proposed fix, which the model can apply (``BrokerConfig.proposed_fixes``): a program that
    #: passes with it applied failed through this bug (:mod:`conformance.generated.attribution`)
    proposed: ProposedFix | None = None

    def affects(self, version: str | PulsarVersion, implementation: str) -> bool:
        """Whether a broker of ``version`` running ``implementation`` (``pip379``/``classic``) has the bug.

        Asked of the model's own gate (:mod:`reference_model.versions`), so the history and the model cannot
        disagree; a bug fixed only by PIP-379 stays in the classic dispatcher.  An :attr:`unfixed` bug is in every
        release.  Any other bug with no gate was fixed before the model's oldest release, or is not a confirmed
        bug: no release the model runs has it.
        """
        if self.implementation == "classic" and implementation != "classic":
            return False
        if self.unfixed:
            return True
        if self.gate is None:
            return False
        if self.fixed_by_pip379:
            return implementation == "classic"
        return not self.gate.present_in(parse_version(version))

    @property
    def fixed_by_pip379(self) -> bool:
        """Fixed only by the PIP-379 dispatcher: the classic dispatcher of 4.x still has it."""
        return "PIP-379" in self.fix


_BEFORE_MODEL = (
    "fixed in 2.6.2, before 2.8.0, the oldest release the model reproduces (2.6 and 2.7 differ from 2.8 in more of"
    " the classic dispatcher than this fix: no ordered removal of recent joiners, no stuck-consumer tracking"
    " (apache/pulsar#7553, also 2.6.2), no per-hash blocking of normal reads, and a STICKY hash without a consumer"
    " was handled differently; see docs/model.md); the case pins the fixed behaviour"
)


def _history(gate: Fix, *, never: tuple[str, ...] = ()) -> dict[str, str | None]:
    """The fix history of a model gate: its first release per line, and lines shown that never got it."""
    history: dict[str, str | None] = {line: None for line in never}
    for first in gate.first_releases:
        v = parse_version(first)
        history[f"{v.major}.{v.minor}"] = first
    return history


_PIP_379 = _history(PIP_379, never=("3.0", "3.3"))

KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug("8292-replay-to-later-joiner", "apache/pulsar#8292", "apache/pulsar#8292", {"2.6": "2.6.2"},
             shown=_BEFORE_MODEL),
    KnownBug("12885-close-during-reads", "apache/pulsar#12885", "apache/pulsar#12890",
             _history(CLASSIC_REPLAY_PRECEDENCE_AFTER_READ), implementation="classic",
             gate=CLASSIC_REPLAY_PRECEDENCE_AFTER_READ),
    KnownBug("14014-sticky-restart-while-blocked", "apache/pulsar#14014", "apache/pulsar#14014",
             _history(CLASSIC_UNSELECTED_TO_REPLAY), implementation="classic", gate=CLASSIC_UNSELECTED_TO_REPLAY),
    KnownBug("20899-second-message-after-join", "apache/pulsar#20899", "none (the issue is open)", {},
             implementation="classic",
             shown="not a confirmed bug: the report's steps (3.0.0, after 2.10.1) use one consumer, and a maintainer"
             " answered in the issue (2023-08-03) that a second message of an unacknowledged key reaching the same"
             " consumer is expected; no reproduction with two consumers was given; the case pins the two-consumer"
             " rule (a joiner gets no message of a key its old owner still holds), which every release keeps"),
    KnownBug("21199-restarted-consumer-unacked", "apache/pulsar#21199", "apache/pulsar#23352 (PIP-379)", _PIP_379,
             implementation="classic", gate=PIP_379),
    KnownBug("21656-joiners-with-replay", "apache/pulsar#21656", "apache/pulsar#23352 (PIP-379)", _PIP_379,
             implementation="classic", gate=PIP_379),
    KnownBug("22050-ring-name-collision", "apache/pulsar#22050", "apache/pulsar#22053",
             _history(CONSISTENT_HASHING_NUL_SEPARATOR, never=("2.10",)), gate=CONSISTENT_HASHING_NUL_SEPARATOR),
    KnownBug("23212-keyless-redelivery", "apache/pulsar#23212", "apache/pulsar#23219",
             _history(NO_KEY_FALLBACK, never=("3.0", "3.3")), gate=NO_KEY_FALLBACK),
    KnownBug("23307-ordering-after-reconnects", "apache/pulsar#23307", "apache/pulsar#23352 (PIP-379)", _PIP_379,
             implementation="classic", gate=PIP_379),
    KnownBug("23327-same-name-keys-move", "apache/pulsar#23327", "apache/pulsar#23327",
             _history(CONSISTENT_HASHING_NAME_INDEX, never=("2.10",)), gate=CONSISTENT_HASHING_NAME_INDEX),
    KnownBug("23795-recently-joined-order", "apache/pulsar#23795", "apache/pulsar#23795 and #23802",
             _history(CLASSIC_RECENTLY_JOINED_SORTED), implementation="classic", gate=CLASSIC_RECENTLY_JOINED_SORTED),
    KnownBug("23803-replay-read-during-rewind", "apache/pulsar#23803 (and #10662)",
             "none (#10662 closed unmerged in 2021, #23803 open)", {}, implementation="classic", unfixed=True,
             proposed=REWIND_BEFORE_REPLAY_READ),
    KnownBug("24730-sticky-gaps", "apache/pulsar#24730", "apache/pulsar#24730", _history(STICKY_GAP_FIX),
             gate=STICKY_GAP_FIX),
)  # fmt: skip
