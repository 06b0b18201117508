"""Asking the geo service before an action: one gate for accounts, wallet, matchmaking and game.

``GeoGate.require(purpose, ...)`` asks ``GeoService.CheckLocation`` whether
this player, from the address the gateway saw (:mod:`services.kit.client_signals`)
and living where their access token says, may do this, and:

- returns the decision when it allows (or allows for review);
- raises ``FailedPrecondition`` naming every reason when it blocks, so the
  caller does nothing else;
- when the geo service cannot be reached (not configured, down, too slow):
  real-money purposes (deposit, withdraw, real-money play) fail closed with
  ``Unavailable``; register, login and play money go on without a decision
  (``None``), logged, since refusing them would take the site down with geo;
- a real-money purpose with no client address (a call that did not come
  through the gateway) is refused: a location is never guessed;
- any other purpose with no client address is still asked about the declared
  residence (an empty address): a restricted residence is refused at register,
  login and play money whether or not an address is known.

``TAVLA_GEO_ADDRESS`` is where the geo service is; unset, real money is
refused. ``TAVLA_GEO_TIMEOUT_SECONDS`` (default 1) bounds each check.
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from services.kit.client import service_channel
from services.kit.client_signals import ClientSignals
from services.kit.config import Env
from services.kit.errors import FailedPrecondition, Unavailable
from services.kit.logging import get_logger
from services.kit.service_tokens import ServiceTokenMinter
from tavla.geo.v1 import geo_pb2, geo_pb2_grpc

GEO_ADDRESS = "TAVLA_GEO_ADDRESS"
GEO_TIMEOUT = "TAVLA_GEO_TIMEOUT_SECONDS"

REAL_MONEY_PURPOSES = frozenset(
    {geo_pb2.PURPOSE_DEPOSIT, geo_pb2.PURPOSE_WITHDRAW, geo_pb2.PURPOSE_PLAY_REAL_MONEY}
)
PURPOSE_WORDS = {
    geo_pb2.PURPOSE_REGISTER: "registering",
    geo_pb2.PURPOSE_LOGIN: "logging in",
    geo_pb2.PURPOSE_DEPOSIT: "depositing",
    geo_pb2.PURPOSE_WITHDRAW: "withdrawing",
    geo_pb2.PURPOSE_PLAY_REAL_MONEY: "playing for real money",
    geo_pb2.PURPOSE_PLAY_MONEY: "playing for play money",
}

log = get_logger("geo_gate")


class GeoGate:
    """Asks the geo service (or refuses, for real money, when it cannot)."""

    def __init__(
        self, stub: geo_pb2_grpc.GeoServiceAsyncStub | None, timeout_seconds: float = 1.0
    ) -> None:
        self._stub = stub
        self._timeout = timeout_seconds
        self._channel: grpc.aio.Channel | None = None

    @classmethod
    def from_env(
        cls, credentials: ServiceTokenMinter, environ: Mapping[str, str] | None = None
    ) -> GeoGate:
        """The gate to the geo service at ``TAVLA_GEO_ADDRESS`` (none: real money is refused)."""
        env = Env(environ)
        address = env.optional_text(GEO_ADDRESS)
        timeout = env.number(GEO_TIMEOUT, 1.0, low=0.05, high=30.0)
        if address is None:
            log.warning("geo_not_configured", variable=GEO_ADDRESS,
                        effect="real-money actions are refused")
            return cls(None, timeout)
        channel = service_channel(address, target="geo", credentials=credentials)
        gate = cls(geo_pb2_grpc.GeoServiceStub(channel), timeout)
        gate._channel = channel
        return gate

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)

    async def require(
        self,
        purpose: geo_pb2.Purpose.ValueType,
        *,
        account_id: str,
        residence: str,
        signals: ClientSignals,
    ) -> geo_pb2.LocationDecision | None:
        """The decision if this may go ahead; raises if it may not (see the module docstring)."""
        real_money = purpose in REAL_MONEY_PURPOSES
        doing = PURPOSE_WORDS.get(purpose, "this")
        if not signals.address and real_money:
            raise FailedPrecondition(
                f"{doing} needs your location, and this request carries no client address "
                "[location_unknown]; use the app or site through the gateway"
            )
        decision = await self._ask(purpose, account_id, residence, signals, real_money, doing)
        if decision is not None and decision.decision == geo_pb2.DECISION_BLOCK:
            raise FailedPrecondition(blocked_message(doing, decision))
        return decision

    async def _ask(
        self,
        purpose: geo_pb2.Purpose.ValueType,
        account_id: str,
        residence: str,
        signals: ClientSignals,
        real_money: bool,
        doing: str,
    ) -> geo_pb2.LocationDecision | None:
        request = geo_pb2.CheckLocationRequest(
            ip_address=signals.address,
            declared_residence=residence,
            account_id=account_id,
            purpose=purpose,
        )
        try:
            if self._stub is None:
                raise _NotConfigured
            decision: geo_pb2.LocationDecision = await self._stub.CheckLocation(
                request, timeout=self._timeout
            )
            return decision
        except (grpc.aio.AioRpcError, _NotConfigured) as error:
            why = error.code().name if isinstance(error, grpc.aio.AioRpcError) else "not configured"
            if real_money:
                if isinstance(error, grpc.aio.AioRpcError):
                    log.warning("geo_unreachable", purpose=doing, reason=error.debug_error_string())
                raise Unavailable(
                    f"the location check cannot be made now ({why}), so {doing} is paused; "
                    "try again in a minute"
                ) from None
            log.warning("geo_unreachable_allowed", purpose=doing, reason=why,
                        account_id=account_id)
            return None


class _NotConfigured(Exception):
    pass


def blocked_message(doing: str, decision: geo_pb2.LocationDecision) -> str:
    """One sentence for the player: every reason, with its code in brackets."""
    reasons = "; ".join(f"{r.message} [{r.code}]" for r in decision.reasons)
    return f"{doing} is not allowed from here: {reasons or 'blocked by the location rules'}"
