"""Payment instruments as a multi-accounting link: the signal and the strong link it makes.

Expected values are worked out by hand from the scenarios, not by the code.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.antiabuse.domain import multi_accounting
from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.multi_accounting import Sighting
from services.antiabuse.domain.signals import SignalKind, payment_signal

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def seen(account: str, value: str, days: float = 0) -> Sighting:
    at = T0 + timedelta(days=days)
    return Sighting(account, SignalKind.PAYMENT, value, at, at)


def test_a_fingerprint_is_qualified_by_its_provider_and_none_is_nothing() -> None:
    assert payment_signal("sandbox", "") is None
    assert payment_signal("sandbox", "  ") is None
    card = payment_signal("http", " Xt5EWLLDS7FJjR1c ")
    assert card is not None and (card.kind, card.value) == (
        SignalKind.PAYMENT,
        "http:Xt5EWLLDS7FJjR1c",
    )
    other_provider = payment_signal("sandbox", "Xt5EWLLDS7FJjR1c")
    assert other_provider is not None and other_provider.value == "sandbox:Xt5EWLLDS7FJjR1c"


def test_accounts_paying_with_one_instrument_are_linked_strongly_at_any_distance() -> None:
    sightings = [
        seen("ann", "http:card-1"),
        seen("bob", "http:card-1", days=200),  # an instrument does not change hands
        seen("cat", "sandbox:card-1"),  # the same token from another provider
        seen("dan", "http:card-2"),
    ]
    found = multi_accounting.links(sightings)
    assert [(link.first, link.second, link.kind) for link in found] == [
        ("ann", "bob", SignalKind.PAYMENT)
    ]
    assert multi_accounting.component("cat", found) == {"cat"}
    assert multi_accounting.component("dan", found) == {"dan"}
    assert multi_accounting.assess({"dan"}, found, {}) is None
    finding = multi_accounting.assess({"ann", "bob"}, found, {})
    assert finding is not None and finding.severity is Severity.HIGH
    [evidence] = finding.evidence
    assert evidence.kind == "shared_payment"
    assert evidence.details == {"value": "http:card-1", "accounts": "ann,bob", "strength": "strong"}
