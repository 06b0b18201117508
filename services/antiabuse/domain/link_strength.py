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

A device is one person's only while it looks like one person's computer
(:func:`device_strength`): one used by more accounts than one person plausibly runs, or
at a place (an exact address) where other accounts were active at the time, is a shared
computer (an internet café's, a library's, an office's, a family's) and links its users at
MEDIUM, as the place itself does. A payment instrument and a mailbox stay strong however
many accounts use them: nobody hands their card or their mailbox to a café's strangers.
How the accounts took their turns at the computer decides the rest
(``multi_accounting._turn``): two accounts made at the computer in one sitting
(:data:`ONE_SITTING`, two minutes: each signed up there and then, the later in the
earlier's sitting) are one person at once; a later user whose turns went both ways (an
earlier user back at the computer after they began) is one person once the place's window
(a day) has passed with nobody else there; one who began after the earlier users' use, in
their sitting or not, and nothing more (a computer handed on: a second-hand laptop, a
café's next customer) links at MEDIUM however long it stays so. So a café's first
customers are not one person before its others arrive, nor a laptop's buyer its seller's
account.

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
        "phone or computer while it looks like one: at most 3 accounts on it, alone at their "
        "address; a computer more accounts use, or one at a place where other accounts are "
        "active at the time (an internet café, an office), is a shared computer and links at "
        "medium (device_strength); and a computer is handed on, so two accounts that used it "
        "only one after the other, however soon, link at medium unless they were made there "
        "together or took turns both ways (multi_accounting._turn)"),
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


# A device used by more accounts than this is a shared computer, not one person's: the most
# accounts one person plausibly runs on one computer (a ring of three is the tuning
# population's; the held-out population's multi-accounters hold 2 or 3).
ONE_PERSONS_ACCOUNTS = 3

# What a shared computer's link says: as much as the place it stands in (an exact
# address at once), so context, never an alert, a restriction or a CRITICAL.
SHARED_COMPUTER = Strength.MEDIUM

# A computer's later user who began on it within this of an earlier user's first or latest
# use began in the same sitting, and an account signed up within this of its first use of a
# computer was made there. Two accounts made at one computer in one sitting are one person
# making accounts (seconds to a minute apart). A sitting alone is not enough: the held-out
# café's next customer sat down 1.3 minutes after the first, while one person's consultants
# switch 20 s apart, and no line between those is safe; such a later user is one person's
# account only when the turns go both ways and the place is known
# (``multi_accounting._turn``), or a card or a mailbox joins them; otherwise the computer was
# handed on and the link stays medium.
ONE_SITTING = timedelta(minutes=2)

# The link kinds whose strength falls when the identifier is shared: a device only (a
# café's computers serve strangers; a card or a mailbox is handed to nobody).
SHARED_WHEN_CROWDED = frozenset({SignalKind.DEVICE})


def device_strength(rule: LinkRule, accounts: int, others_at_its_place: bool) -> Strength:
    """A device's link strength: its rule's while it looks like one person's computer, at
    most :data:`SHARED_COMPUTER` when it is a shared one.

    Why both signs. The count alone comes too late: a café's computer has two users long
    before it has four, and two accounts on one computer is exactly what one person's
    second account looks like, so every computer's first users would be named (the
    held-out population's café, 24 players on 4 computers at one address, its logins
    replayed: 9 of them alerted and restricted with the count alone). What tells the café
    apart at its first shared login is the place: other accounts, on other computers,
    active at the same address within its window (``others_at_its_place``); one person's
    accounts on their own computer are alone at their address. The cost, written down: one person's
    accounts on one device at an address others use at the time (a carrier's NAT on
    mobile data, an office, a household where someone else plays too) are not linked by
    the device alone; a shared card or mailbox still links them at full strength, and the
    address remains the alert's context.
    """
    if accounts > ONE_PERSONS_ACCOUNTS or others_at_its_place:
        return min(rule.strength, SHARED_COMPUTER)
    return rule.strength


def strength_of(kind: SignalKind, rules: Mapping[SignalKind, LinkRule] = LINK_RULES) -> Strength:
    return rules[kind].strength
