"""The tournaments' use cases: create, list, show, register, unregister.

Each opens a unit of work, loads the tournament (locked when it changes), applies the
domain (:mod:`services.tournaments.domain.lobby`), saves, and records its events in
the outbox in the same transaction. Calls to other services happen outside the
transaction: registering asks geo (real money) and places both holds first, then
records the entry under the row lock (and gives the holds back when the seat went
meanwhile); leaving records the departure first, then releases the holds. What must
follow a change with other services (the start's fees, the games, the prizes, the
refunds of a cancelled event) is the driver's (:mod:`services.tournaments.driver`),
flagged in the same transaction so nothing is lost to a crash.

A player holding an unused ticket to a tournament (won in its satellite) registers with
it: the ticket's holds, already placed in their name at this tournament, become their
entry's, so no money moves from them; the ticket is marked used in the transaction that
seats them (once: the update names an unused ticket), and they cannot leave, since
leaving would turn the ticket into cash.

A tournament with an added prize (a freeroll's whole pool, or house money added to the
buy-ins) has it held by the wallet as soon as it is created (``AddToPool``, keyed by the
tournament), within the operator's ``TAVLA_MONEY_MAX_ADDED_PRIZE_<CUR>``, checked here
first so that nothing is created above it; the same create again holds it again if the
first call could not (the key makes it once).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from services.kit.geo_gate import GeoGate
from services.kit.logging import get_logger
from services.kit.money_bounds import Bound, MoneyBounds
from services.kit.self_exclusion import require_not_self_excluded
from services.tournaments import messages
from services.tournaments.domain import lobby
from services.tournaments.domain.draw import SEED_BYTES
from services.tournaments.domain.lobby import Entrant, Ticket, Tournament
from services.tournaments.domain.rules import (
    PLAY,
    InvalidRules,
    Kind,
    Rules,
    validate_satellite_target,
)
from services.tournaments.ports import WalletPort, hold_added_prize
from services.tournaments.store import TournamentsUnitOfWork
from tavla.geo.v1 import geo_pb2
from tavla.tournaments.v1 import events_pb2

log = get_logger(__name__)

MAX_NAME = 100
MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class Registrant:
    """A player registering, with what the gateway and their token said about them."""

    account_id: str
    residence: str = ""
    address: str = ""
    device_id: str = ""


class Tournaments:
    def __init__(
        self,
        unit_of_work: Callable[[], TournamentsUnitOfWork],
        *,
        wallet: WalletPort,
        geo: GeoGate,
        clock: Clock,
        wake: Callable[[], None] = lambda: None,
        bounds: MoneyBounds | None = None,
        reads: Callable[[], TournamentsUnitOfWork] | None = None,
    ) -> None:
        self._uow = unit_of_work
        self._reads = reads or unit_of_work  # the lobby's reads: store.ReadingUnitOfWork
        self._bounds = bounds or MoneyBounds.defaults()
        self._wallet = wallet
        self._geo = geo
        self._clock = clock
        self._wake = wake  # the driver, when a change left it work or a time to keep

    async def create(self, name: str, rules: Rules, key: str) -> Tournament:
        """A new tournament under ``rules`` with a fresh secret seed; the same key again
        answers the tournament it created."""
        if not key or len(key) > 200:
            raise InvalidArgument("idempotency_key is required (1 to 200 characters)")
        if not name.strip() or len(name) > MAX_NAME:
            raise InvalidArgument(f"name is required (1 to {MAX_NAME} characters)")
        _offered(rules)
        if rules.added_prize:
            self._require_added_prize(rules)
        now = self._clock.now()
        tournament = Tournament(str(uuid.uuid4()), name.strip(), rules, os.urandom(SEED_BYTES), now)
        async with self._uow() as uow:
            existing = await uow.tournaments.id_of_key(key)
            if existing is not None:
                tournament = await self._require(uow, existing)
            else:
                tournament = await self._add(uow, tournament, key)
                log.info(
                    "tournament_created", tournament_id=tournament.id, kind=rules.kind.value
                )
                self._wake()  # its registration closes and its start: times the driver keeps
        await self._hold_added_prize(tournament)  # again on a retry: it may have failed
        return tournament

    async def _add(
        self, uow: TournamentsUnitOfWork, tournament: Tournament, key: str
    ) -> Tournament:
        rules = tournament.rules
        if rules.kind is Kind.SATELLITE:  # its rules state what a ticket is worth
            rules = replace(rules, ticket_value=await self._check_target(uow, rules))
            tournament = replace(tournament, rules=rules)
        await uow.tournaments.add(tournament, key)
        uow.publish(
            messages.TOPIC,
            tournament.id,
            events_pb2.TournamentCreated(
                tournament_id=tournament.id,
                name=tournament.name,
                rules=messages.rules_message(rules),
                seed_commitment=tournament.commitment,
                occurred_at=messages.timestamp(tournament.created_at),
            ),
        )
        await uow.commit()
        return tournament

    def _require_added_prize(self, rules: Rules) -> None:
        """The house adds money only in a currency the platform plays in (the wallet holds no
        other), and no more than the operator's bound for it."""
        played = sorted(self._bounds.by_currency)
        if rules.currency not in played:
            raise InvalidRules(
                f"the house adds prizes only in the currencies the platform plays in "
                f"({', '.join(played)}), not {rules.currency}"
            )
        self._bounds.require(Bound.ADDED_PRIZE, rules.added_prize, rules.currency)

    async def _hold_added_prize(self, tournament: Tournament) -> None:
        rules = tournament.rules
        if rules.added_prize:
            await hold_added_prize(self._wallet, tournament.id, rules.added_prize, rules.currency)

    async def get(self, tournament_id: str) -> tuple[Tournament, dict[str, int]]:
        """The tournament and the prizes paid (empty until the final)."""
        async with self._reads() as uow:
            tournament = await self._require(uow, tournament_id)
            if tournament.status is not lobby.Status.FINISHED:
                return tournament, {}  # prizes are recorded with the finish
            return tournament, await uow.tournaments.prizes(tournament_id)

    async def list(self, statuses: list[str], currency: str, page_size: int) -> list[Tournament]:
        if not 0 <= page_size <= MAX_PAGE:
            raise InvalidArgument(f"page_size is 1 to {MAX_PAGE} (0: 50)")
        async with self._reads() as uow:
            return await uow.tournaments.listed(statuses, currency, page_size or 50)

    async def register(self, tournament_id: str, registrant: Registrant) -> Tournament:
        now = self._clock.now()
        async with self._reads() as uow:  # checked again under the lock by _seat
            tournament = await self._require(uow, tournament_id)
            await require_not_self_excluded(uow.session, registrant.account_id, now)
            entry = await uow.tournaments.next_entry(tournament_id, registrant.account_id)
            tickets = await uow.tournaments.unused_tickets(tournament_id, registrant.account_id)
        if tournament.entrant(registrant.account_id) is not None:
            return tournament  # a retry: already seated
        refusal = lobby.registration_refusal(tournament, registrant.account_id, now)
        if refusal is not None:
            raise lobby.RegistrationRefused(refusal)
        await self._ask_geo(tournament.rules, registrant)
        if tickets:  # the ticket's holds are the entry: no money moves from the player
            return await self._seat(tournament_id, tickets[0].entrant(now), entry, tickets[0])
        entrant = await self._hold(tournament, registrant.account_id, entry)
        try:
            return await self._seat(tournament_id, entrant, entry)
        except FailedPrecondition:
            await self._release(entrant, "the tournament's registration closed meanwhile")
            raise

    async def _seat(
        self, tournament_id: str, entrant: Entrant, entry: int, ticket: Ticket | None = None
    ) -> Tournament:
        async with self._uow() as uow:
            before = await self._require(uow, tournament_id, lock=True)
            now = self._clock.now()
            await require_not_self_excluded(uow.session, entrant.account_id, now)
            after = lobby.register(before, entrant, now)
            if after is before:
                return before  # seated by a concurrent retry with the same holds
            if await uow.tournaments.next_entry(tournament_id, entrant.account_id) != entry:
                raise lobby.RegistrationRefused("you registered and left meanwhile: try again")
            if ticket is not None and not await uow.tournaments.use_ticket(ticket, now):
                raise lobby.RegistrationRefused("your ticket was used or returned meanwhile")
            await uow.tournaments.add_entrant(tournament_id, entrant, entry)
            uow.publish(
                messages.TOPIC,
                tournament_id,
                events_pb2.PlayerRegistered(
                    tournament_id=tournament_id,
                    account_id=entrant.account_id,
                    buy_in_hold_id=entrant.buy_in_hold_id,
                    fee_hold_id=entrant.fee_hold_id,
                    occurred_at=messages.timestamp(now),
                ),
            )
            closing = lobby.registration_closes(after, now)
            if closing:
                after = lobby.close_registration(after)
            await uow.tournaments.save(after, needs_work=closing)
            await uow.commit()
        if closing:
            log.info("tournament_seated", tournament_id=tournament_id, status=after.status.value)
            self._wake()
        return after

    async def unregister(self, tournament_id: str, account_id: str) -> Tournament:
        async with self._uow() as uow:
            before = await self._require(uow, tournament_id, lock=True)
            after, entrant = lobby.unregister(before, account_id)
            if await uow.tournaments.entered_with_ticket(tournament_id, account_id):
                raise lobby.RegistrationRefused(
                    f"you entered {before.name!r} with a satellite's ticket: your seat is kept "
                    "(a ticket cannot be turned into cash)"
                )
            now = self._clock.now()
            await uow.tournaments.mark_left(tournament_id, account_id, now)
            await uow.tournaments.save(after, needs_work=True)  # the holds, if this call fails
            uow.publish(
                messages.TOPIC,
                tournament_id,
                events_pb2.PlayerUnregistered(
                    tournament_id=tournament_id,
                    account_id=account_id,
                    occurred_at=messages.timestamp(now),
                ),
            )
            await uow.commit()
        await self._release(entrant, "left the tournament before its start")
        async with self._uow() as uow:
            await uow.tournaments.mark_released(tournament_id, account_id, self._clock.now())
            await uow.commit()
        return after

    async def _ask_geo(self, rules: Rules, registrant: Registrant) -> None:
        purpose = (
            geo_pb2.PURPOSE_PLAY_MONEY if rules.currency == PLAY
            else geo_pb2.PURPOSE_PLAY_REAL_MONEY
        )
        await self._geo.require(
            purpose,
            account_id=registrant.account_id,
            residence=registrant.residence,
            signals=ClientSignals(registrant.address, registrant.device_id),
        )

    async def _hold(self, tournament: Tournament, account_id: str, entry: int) -> Entrant:
        """Both holds, keyed by tournament, account and entry (a retry holds nothing twice,
        a player who left and comes back gets new ones)."""
        rules = tournament.rules
        holds = []
        for amount, what in ((rules.buy_in, "buy-in"), (rules.entry_fee, "fee")):
            if not amount:
                holds.append("")
                continue
            try:
                holds.append(
                    await self._wallet.place_hold(
                        account_id, amount, rules.currency, tournament.id,
                        f"{tournament.id}:{account_id}:{entry}:{what}",
                    )
                )
            except FailedPrecondition as refused:
                for placed in filter(None, holds):
                    await self._wallet.release_hold(placed, "registration refused")
                raise FailedPrecondition(
                    f"the {what} of {tournament.name!r} cannot be held: {refused.message}"
                ) from None
        return Entrant(account_id, holds[0], holds[1], self._clock.now())

    async def _release(self, entrant: Entrant, reason: str) -> None:
        for hold_id in entrant.hold_ids:
            await self._wallet.release_hold(hold_id, reason)

    async def _check_target(self, uow: TournamentsUnitOfWork, rules: Rules) -> int:
        """What a ticket to the satellite's target is worth, once the target is found taking
        entries and fit to be won (``validate_satellite_target``). A scheduled satellite's
        tickets are counted at its draw, from the field it has then."""
        target_id = rules.target_tournament_id
        target = await uow.tournaments.get(target_id) if len(target_id) <= 36 else None
        if target is None:
            raise InvalidRules(f"the satellite's target {target_id!r} is no tournament here")
        if target.status is not lobby.Status.REGISTERING:
            raise InvalidRules(
                f"the satellite's target {target.name!r} no longer takes entries "
                f"(it is {target.status.value})"
            )
        validate_satellite_target(rules, target.id, target.rules)
        return target.rules.ticket_price

    async def _require(
        self, uow: TournamentsUnitOfWork, tournament_id: str, *, lock: bool = False
    ) -> Tournament:
        if not tournament_id or len(tournament_id) > 36:
            raise InvalidArgument("tournament_id is required (the id ListTournaments gives)")
        tournament = await uow.tournaments.get(tournament_id, lock=lock)
        if tournament is None:
            raise NotFound(f"no tournament {tournament_id}")
        return tournament


def _offered(rules: Rules) -> None:
    """Refuse what the service does not run: a satellite's tickets are bought by its
    entrants' buy-ins alone, so no prize added by the house to a satellite."""
    if rules.added_prize and rules.kind is Kind.SATELLITE:
        raise InvalidArgument(
            "a satellite's tickets are paid from its entrants' buy-ins: set added_prize to 0"
        )
