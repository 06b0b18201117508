"""Four-eyes: an officer never acts on an alert, case or account that names their own
account or an account linked to it.

Compliance officers are player accounts with a role, so an officer can be a subject,
or be one person with a subject (a second account on the same device, mailbox or
payment instrument: the multi-accounting detector's strong links,
:mod:`services.antiabuse.domain.link_strength`, directly or through other accounts).
Such an officer is refused with PERMISSION_DENIED naming the account, and another
officer acts. Medium and weak links (an exact address, a shared /24 or /64: a
carrier NAT, an office) do not refuse: officers share their office's address with
each other, and a carrier's with strangers. The operator's policy (actor
``policy``) is no person and is never refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.antiabuse.cases.domain import POLICY_ACTOR
from services.antiabuse.domain import multi_accounting as linking
from services.antiabuse.store import Facts
from services.kit.errors import PermissionDenied


async def strongly_linked(facts: Facts, account_id: str) -> set[str]:
    """The accounts strong links join to ``account_id`` (itself included)."""
    sightings = await facts.neighbourhood(account_id)
    return linking.one_person(account_id, linking.links(sightings))


async def check_disinterested(
    facts: Facts, officer: str, subjects: Iterable[str], what: str, *, assignee: bool = False
) -> None:
    """Refuse ``officer`` (the caller, or with ``assignee`` the officer a case is given
    to) if ``what`` (an alert, a case) names them or an account linked to them."""
    if officer == POLICY_ACTOR:
        return
    whose, remedy = (("the assignee's", "assign it to an officer it does not concern")
                     if assignee else ("your", "another compliance officer must act on it"))
    named = set(subjects)
    if officer in named:
        raise PermissionDenied(f"{what} names {whose} own account ({officer}): {remedy}")
    linked = sorted((await strongly_linked(facts, officer)) & named)
    if linked:
        raise PermissionDenied(
            f"{what} names {', '.join(linked)}, linked to {whose} account ({officer}) by a "
            f"shared device, mailbox, address or payment instrument: {remedy}"
        )
