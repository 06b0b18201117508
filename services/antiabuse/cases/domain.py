"""Cases and their sanctions, pure: what may be done to a case, what a sanction must name,
and each sanction's id. No I/O, no clock (times are arguments).

A case is open until resolved, once: CLEARED (no sanction) or SANCTIONED (at
least one, every one on the case's own subjects). A resolution that suspends or
terminates an account is a proposal until a second officer approves it
(``NEEDS_APPROVAL``); the case stays open meanwhile. Resolving a resolved case the
same way again (same outcome, same sanctions) is the same call repeated and
changes nothing; any other change to a resolved case is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from services.kit.errors import FailedPrecondition, InvalidArgument

MAX_NOTE = 2000
MAX_ALERTS = 100
# The actor of an automatic action (no officer): the operator's policy.
POLICY_ACTOR = "policy"
_NAMESPACE = uuid.UUID("0f3a3c2e-7b1d-4c55-9a51-6d2f2f0b9c14")


class CaseStatus(StrEnum):
    OPEN = "open"
    CLEARED = "cleared"
    SANCTIONED = "sanctioned"


class SanctionKind(StrEnum):
    FREEZE_WALLET = "freeze_wallet"
    SUSPEND_ACCOUNT = "suspend_account"
    FORBID_PAIR = "forbid_pair"
    TERMINATE_ACCOUNT = "terminate_account"


# Sanctions that take effect only once a second, different officer approves them: they
# end a player's access (a suspension, a termination closing the account for good).
# A wallet freeze and a forbidden pair take effect at once: they only hold things as
# they are (no money leaves, the pair cannot meet) while people decide, and are what
# the automatic policy and the multi-accounting detector already impose unreviewed.
NEEDS_APPROVAL = frozenset({SanctionKind.SUSPEND_ACCOUNT, SanctionKind.TERMINATE_ACCOUNT})


class SanctionState(StrEnum):
    IMPOSED = "imposed"
    PROPOSED = "proposed"  # waiting for a second officer


@dataclass(frozen=True)
class SanctionOrder:
    """A sanction as asked for: a kind, an account, and for FORBID_PAIR the other one."""

    kind: SanctionKind
    account_id: str
    other_account_id: str = ""

    def sanction_id(self, case_id: str) -> str:
        """The same sanction of the same case has one id, however often it is asked for."""
        pair = sorted([self.account_id, self.other_account_id])
        return str(uuid.uuid5(_NAMESPACE, f"{case_id}|{self.kind.value}|{pair[0]}|{pair[1]}"))


def check_note(note: str, *, required: bool = False) -> str:
    text = note.strip()
    if required and not text:
        raise InvalidArgument("note is required: what was found or decided")
    if len(text) > MAX_NOTE:
        raise InvalidArgument(f"note is longer than {MAX_NOTE} characters")
    if "\x00" in text:  # PostgreSQL's text cannot hold it
        raise InvalidArgument("note holds a NUL character")
    return text


def check_alert_ids(alert_ids: Sequence[str]) -> list[str]:
    unique = sorted({a for a in alert_ids if a})
    if not unique:
        raise InvalidArgument("alert_ids is required: the alerts the case is about")
    if len(unique) > MAX_ALERTS:
        raise InvalidArgument(f"a case groups at most {MAX_ALERTS} alerts")
    return unique


def check_sanctions(
    outcome: CaseStatus, orders: Sequence[SanctionOrder], subjects: Sequence[str]
) -> list[SanctionOrder]:
    """The sanctions a resolution imposes, checked, without repeats, in a stable order."""
    if outcome is CaseStatus.OPEN:
        raise InvalidArgument("outcome must be CASE_STATUS_CLEARED or CASE_STATUS_SANCTIONED")
    if outcome is CaseStatus.CLEARED and orders:
        raise InvalidArgument("a cleared case imposes no sanction; resolve it as SANCTIONED")
    if outcome is CaseStatus.SANCTIONED and not orders:
        raise InvalidArgument("a sanctioned case needs at least one sanction")
    known = set(subjects)
    checked: dict[tuple[str, str, str], SanctionOrder] = {}
    for order in orders:
        named = [order.account_id] + (
            [order.other_account_id] if order.kind is SanctionKind.FORBID_PAIR else []
        )
        if order.kind is SanctionKind.FORBID_PAIR and (
            not order.other_account_id or order.other_account_id == order.account_id
        ):
            raise InvalidArgument("forbid_pair needs two different accounts")
        if order.kind is not SanctionKind.FORBID_PAIR and order.other_account_id:
            raise InvalidArgument(f"{order.kind.value} takes one account, not a pair")
        strangers = [a for a in named if a not in known]
        if strangers:
            raise InvalidArgument(
                f"{', '.join(strangers)} is not a subject of this case; a case sanctions "
                "only the accounts its alerts name"
            )
        pair = sorted(named)
        normal = SanctionOrder(order.kind, pair[0], pair[1] if len(pair) > 1 else "")
        checked[(normal.kind.value, normal.account_id, normal.other_account_id)] = normal
    return [checked[key] for key in sorted(checked)]


def check_open(status: CaseStatus, case_id: str) -> None:
    if status is not CaseStatus.OPEN:
        raise FailedPrecondition(f"case {case_id} is {status.value}; a resolved case is closed")
