"""The decision: may this player do this, from here, living there?

Pure: the caller looks the address up (``services.geo.lookup``) and passes the
place and network flags it found. The policy (see ``services/geo/README.md``):

- A rule entry that blocks the purpose at the detected place, or at the
  declared residence, blocks (``location_restricted``, ``residence_restricted``):
  the seed speaks of residents, regulators of physical location, so both count.
- Real-money purposes fail closed: every doubt blocks, each with its own
  reason (address not placed, region unknown where regions matter, each kind
  of anonymous network, residence missing or without its region).
- Register and login flag the same doubts for review instead of blocking.
- Play money is allowed everywhere except where an entry blocks play money.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum

from services.geo.domain.purposes import ACCOUNT, REAL_MONEY, Purpose
from services.geo.domain.rules import Rules
from services.kit.iso3166 import Place


class Outcome(StrEnum):
    """The decision; ``review`` is allowed now but flagged for the compliance team."""

    ALLOW = "allow"
    BLOCK = "block"
    REVIEW = "review"


class ReasonCode(StrEnum):
    """Machine-readable reasons; each comes with a sentence in ``Reason.message``."""

    LOCATION_RESTRICTED = "location_restricted"
    RESIDENCE_RESTRICTED = "residence_restricted"
    LOCATION_UNPLACED = "location_unplaced"
    LOCATION_REGION_UNKNOWN = "location_region_unknown"
    RESIDENCE_MISSING = "residence_missing"
    RESIDENCE_REGION_UNKNOWN = "residence_region_unknown"
    ANONYMOUS_NETWORK = "anonymous_network"
    ANONYMOUS_VPN = "anonymous_vpn"
    PUBLIC_PROXY = "public_proxy"
    RESIDENTIAL_PROXY = "residential_proxy"
    TOR_EXIT_NODE = "tor_exit_node"
    HOSTING_PROVIDER = "hosting_provider"


@dataclass(frozen=True, slots=True)
class Reason:
    code: ReasonCode
    message: str


@dataclass(frozen=True, slots=True)
class NetworkFlags:
    """The Anonymous-IP database's answer for the address (all False: not listed)."""

    is_anonymous: bool = False
    is_anonymous_vpn: bool = False
    is_public_proxy: bool = False
    is_residential_proxy: bool = False
    is_tor_exit_node: bool = False
    is_hosting_provider: bool = False


_FLAG_REASONS = (
    ("is_anonymous_vpn", ReasonCode.ANONYMOUS_VPN, "The address belongs to an anonymous VPN."),
    ("is_public_proxy", ReasonCode.PUBLIC_PROXY, "The address is a public proxy."),
    ("is_residential_proxy", ReasonCode.RESIDENTIAL_PROXY, "The address is a residential proxy."),
    ("is_tor_exit_node", ReasonCode.TOR_EXIT_NODE, "The address is a Tor exit node."),
    (
        "is_hosting_provider",
        ReasonCode.HOSTING_PROVIDER,
        "The address belongs to a hosting provider, not a home or mobile network.",
    ),
)


UNPLACED = "Your location could not be determined from your network address."
NO_RESIDENCE = "No residence is on record; it is needed for real-money play."
ANONYMOUS = "The address belongs to an anonymising network."


@dataclass(frozen=True, slots=True)
class Check:
    """What is known about one request."""

    purpose: Purpose
    location: Place | None
    declared: Place | None
    network: NetworkFlags | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    reasons: tuple[Reason, ...]
    country: str
    region: str
    rules_version: str

    @property
    def codes(self) -> list[str]:
        return [reason.code.value for reason in self.reasons]


def decide(check: Check, rules: Rules) -> Decision:
    """Apply ``rules`` to ``check``; see the module docstring for the policy."""
    blocks = _restrictions(check, rules)
    doubts = _doubts(check, rules) if check.purpose in REAL_MONEY | ACCOUNT else []
    if check.purpose in REAL_MONEY:
        blocks, doubts = blocks + doubts, []
    outcome = Outcome.BLOCK if blocks else Outcome.REVIEW if doubts else Outcome.ALLOW
    location = check.location
    return Decision(
        outcome=outcome,
        reasons=tuple(blocks + doubts),
        country=location.country if location else "",
        region=(location.region or "") if location else "",
        rules_version=rules.version,
    )


def _restrictions(check: Check, rules: Rules) -> list[Reason]:
    reasons = []
    if check.location and (entry := rules.restriction(check.location, check.purpose)):
        where = f"You appear to be in {entry.name} ({entry.code})."
        reasons.append(Reason(ReasonCode.LOCATION_RESTRICTED, f"{where} {entry.note}"))
    if check.declared and (entry := rules.restriction(check.declared, check.purpose)):
        where = f"Your residence is {entry.name} ({entry.code})."
        reasons.append(Reason(ReasonCode.RESIDENCE_RESTRICTED, f"{where} {entry.note}"))
    return reasons


def _doubts(check: Check, rules: Rules) -> list[Reason]:
    reasons = _location_doubts(check.location, check.purpose, rules)
    reasons.extend(_network_reasons(check.network))
    reasons.extend(_residence_doubts(check.declared, check.purpose, rules))
    return reasons


def _location_doubts(location: Place | None, purpose: Purpose, rules: Rules) -> list[Reason]:
    if location is None:
        return [Reason(ReasonCode.LOCATION_UNPLACED, UNPLACED)]
    if location.region is None and rules.has_restricted_regions(location.country, purpose):
        message = f"Your state or region in {location.country} could not be determined."
        return [Reason(ReasonCode.LOCATION_REGION_UNKNOWN, message)]
    return []


def _residence_doubts(declared: Place | None, purpose: Purpose, rules: Rules) -> list[Reason]:
    if declared is None:
        return [Reason(ReasonCode.RESIDENCE_MISSING, NO_RESIDENCE)]
    if declared.region is None and rules.has_restricted_regions(declared.country, purpose):
        message = f"Your residence in {declared.country} needs its state or region."
        return [Reason(ReasonCode.RESIDENCE_REGION_UNKNOWN, message)]
    return []


def _network_reasons(network: NetworkFlags | None) -> list[Reason]:
    if network is None:
        return []
    reasons = [
        Reason(code, message) for name, code, message in _FLAG_REASONS if getattr(network, name)
    ]
    if network.is_anonymous and not reasons:
        reasons.append(Reason(ReasonCode.ANONYMOUS_NETWORK, ANONYMOUS))
    return reasons


FLAG_NAMES = tuple(field.name for field in fields(NetworkFlags))
