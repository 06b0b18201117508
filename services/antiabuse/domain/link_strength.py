"""How much a shared identifier says that two accounts are one person: one table, a line per
link kind, with the reason beside it (pure).

A link's strength decides everything automatic that follows from it:

- STRONG, "one person": a multi-accounting alert at HIGH, CRITICAL once the accounts
  played each other or moved money; matchmaking's pair restriction; chip dumping
  between them at CRITICAL (and so the default automatic freeze);
- MEDIUM and WEAK, context: evidence on the alert a strong link raises, the risk
  profile's linked accounts, consulting's candidates; never an alert by themselves
  (the detector, ``detectors/multi_accounting.py``, says why), a restriction, a freeze
  or a CRITICAL. The severity tables below still grade a medium link, for :func:`assess` of
  the domain module, which the detector calls on one person's accounts only.

Links through third accounts join two accounts at the strength of the path's weakest
link: a strong link to a neighbour and a weak link onward make a weak path, so only a
path of strong links makes two accounts one person (:func:`.multi_accounting.one_person`).

Adding a link kind is one line of :data:`LINK_RULES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import IntEnum

from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.signals import SignalKind


class Strength(IntEnum):
    WEAK = 1
    MEDIUM = 2
    STRONG = 3


@dataclass(frozen=True)
class LinkRule:
    strength: Strength
    # Two accounts are linked only when they used the identifier within this time of each
    # other (the gap between their spans of use); None: at any time.
    window: timedelta | None
    reason: str


LINK_RULES: Mapping[SignalKind, LinkRule] = {
    SignalKind.DEVICE: LinkRule(Strength.STRONG, None, "an app installation's id is one person's "
        "phone or computer (the house rules allow one account per computer, so a shared "
        "family computer is a breach too)"),
    SignalKind.EMAIL: LinkRule(Strength.STRONG, None, "one mailbox (case, +tags and Gmail dots "
        "removed) is one person's: whoever reads it controls both accounts"),
    SignalKind.PAYMENT: LinkRule(Strength.STRONG, None, "one card or bank account (the "
        "provider's fingerprint) pays for both accounts: the strongest real-world sign of one "
        "person"),
    SignalKind.ADDRESS: LinkRule(Strength.MEDIUM, timedelta(hours=24), "one public address "
        "at once is one home, but also an office, a campus or a carrier's NAT with thousands "
        "of strangers; home and mobile addresses are reassigned within days, so beyond a day "
        "the same address is as likely a stranger who got it later"),
    SignalKind.NETWORK: LinkRule(Strength.WEAK, timedelta(days=7), "a /24 or /64 is a "
        "neighbourhood: a provider's block, a campus, an office; many strangers share it"),
}  # fmt: skip

# Kinds that link accounts at all (a display name corroborates only: many honest players
# share a first name).
LINKING = frozenset(LINK_RULES)

# The weakest link the multi-accounting detector walks to gather an account's component
# and its evidence (an exact address: a carrier's /24 or /64 would walk thousands of
# strangers at every login); only strong links within it make one person.
ALERTING = Strength.MEDIUM

# The multi-accounting grade of accounts joined at a strength: alone, and once they played
# each other or moved money between them (weak: none, see above).
SEVERITY_ALONE: Mapping[Strength, Severity] = {
    Strength.MEDIUM: Severity.MEDIUM,
    Strength.STRONG: Severity.HIGH,
}
SEVERITY_TOGETHER: Mapping[Strength, Severity] = {
    Strength.MEDIUM: Severity.HIGH,
    Strength.STRONG: Severity.CRITICAL,
}


def strength_of(kind: SignalKind, rules: Mapping[SignalKind, LinkRule] = LINK_RULES) -> Strength:
    return rules[kind].strength
