"""The driver: what follows a tournament's changes in other services, done exactly once.

Changes recorded in this service's database (a seat taken, a match decided, a
departure) flag the tournament (``needs_work``) in their own transaction; the driver
then does what they call for with the wallet and the game service, each call keyed by
the tournament (``<id>:fees``, ``<id>:<match id>``, ``<id>:prizes``), so a retry, a
second replica or a restart after a SIGKILL repeats nothing:

- a departure, or a cancelled event: release the entries' holds (and a cancelled
  event's added prize, back to the house);
- registration past its close time: the draw, or the cancellation below the minimum;
- a seated tournament at its start: the added prize held (``AddToPool``, once by its
  key: create held it already unless the wallet could not be reached), the fees become
  house revenue (the wallet's ``SettlePool`` of the fee holds), then RUNNING;
- a running one: create each ready match's game (round length, clock, Crawford on,
  no Jacoby, no beavers; :data:`GAMES_AT_ONCE` at a time) and record it, or forfeit the
  match of a player who excluded themself since registering (the game would refuse
  them); once the final is won, pay the pool by the prize table (``SettlePool`` of the
  buy-in holds and the added prize's house hold), then FINISHED; a satellite's pool pays
  tickets instead (``SettlePool`` with tickets: each winner's ticket held at once at the
  target, keyed ``<id>:tickets``, and what the tickets leave paid in cash to the next
  finish in the same call), recorded with the finish, as soon as no more players remain
  than tickets: a satellite creates no game for a later round (``lobby.matches_to_play``);
- a tournament whose registration has closed (seated or cancelled): the holds of tickets
  to it that were never used go back to their holders, the value of the prize they won.

Each step re-reads the tournament under its row lock before it records anything, and
clears the flag only when the locked state has nothing left to do: a game's record sets
it from the state it locked (cleared when no other match waits for its game and no
prizes are due), so a pass that created every game it found records nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from prometheus_client import Counter

from services.kit.clock import Clock
from services.kit.errors import NotFound
from services.kit.failpoints import failpoint
from services.kit.logging import get_logger
from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Status, Tournament
from services.tournaments.domain.rules import PLAY, Kind
from services.tournaments.ports import GamePort, TicketTarget, WalletPort, hold_added_prize
from services.tournaments.store import TournamentsUnitOfWork
from tavla.game.v1 import game_pb2
from tavla.tournaments.v1 import events_pb2

log = get_logger(__name__)

# A round's games are created this many at a time: a 1,024-entrant event's 512 first-round
# games start in a few rounds of calls, not one after another.
GAMES_AT_ONCE = 16
DUE_AT_ONCE = 50  # tournaments taken by one pass
RETRY_SECONDS = 1.0  # after a step failed (the wallet or the game away), the next pass
# Past a due time by this much, so the pass finds the tournament due on a clock read later.
CLOCK_MARGIN_SECONDS = 0.01

DRIVER_FAILURES = Counter(
    "tavla_tournaments_driver_failures",
    "Driver passes over a tournament that failed (retried at the next pass), by status.",
    ["status"],
)


class Driver:
    def __init__(
        self,
        unit_of_work: Callable[[], TournamentsUnitOfWork],
        *,
        wallet: WalletPort,
        games: GamePort,
        clock: Clock,
        reads: Callable[[], TournamentsUnitOfWork] | None = None,
    ) -> None:
        self._uow = unit_of_work
        # What only reads (finding due tournaments, a load choosing the step, exclusions):
        # ``store.ReadingUnitOfWork``, no BEGIN and ROLLBACK around it.
        self._reads = reads or unit_of_work
        self._wallet = wallet
        self._games = games
        self._clock = clock
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """Work was recorded (a tournament created, a seat that closes a Sit & Go, a match
        decided): pass now, not at the next fallback."""
        self._woken.set()

    async def run(self, fallback_seconds: float) -> None:
        """Pass over every tournament with work, then sleep until a wake, the next time a
        tournament comes due by the clock, a retry, or ``fallback_seconds`` at most.

        The fallback only catches what nothing woke this replica for (another replica's
        change it did not see): an idle service wakes once per fallback, not every second.
        """
        while True:
            self._woken.clear()
            soon = await self.pass_once()
            wait = await self._until_next_pass(fallback_seconds if soon is None else soon)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), timeout=wait)

    async def pass_once(self) -> float | None:
        """One pass; how soon the next must come (None: when woken or a time comes due)."""
        async with self._reads() as uow:
            due = await uow.tournaments.due(self._clock.now(), limit=DUE_AT_ONCE)
        soon = 0.0 if len(due) == DUE_AT_ONCE else None  # more are waiting: at once
        for tournament_id in due:
            try:
                await self.advance(tournament_id)
            except Exception as error:  # one tournament's failure stops no other
                status = await self._status(tournament_id)
                DRIVER_FAILURES.labels(status).inc()
                log.warning("tournament_step_failed", tournament_id=tournament_id,
                            status=status, error=repr(error))
                soon = min(soon, RETRY_SECONDS) if soon is not None else RETRY_SECONDS
        return soon

    async def _until_next_pass(self, longest: float) -> float:
        """Seconds to the next pass: ``longest``, or less when a registration closes or a
        seated tournament starts before then."""
        now = self._clock.now()
        async with self._reads() as uow:
            upcoming = await uow.tournaments.next_due_at(now)
        if upcoming is None:
            return longest
        return min(longest, max((upcoming - now).total_seconds(), 0.0) + CLOCK_MARGIN_SECONDS)

    async def advance(self, tournament_id: str) -> None:
        """Every step the tournament is ready for now, one after another."""
        for _ in range(8):  # registering -> seated -> running -> finished, with room
            tournament = await self._load(tournament_id)
            step = {
                Status.REGISTERING: self._registering,
                Status.CANCELLING: self._cancelling,
                Status.SEATED: self._seated,
                Status.RUNNING: self._running,
            }.get(tournament.status)
            if step is None or not await step(tournament):
                return

    async def _registering(self, tournament: Tournament) -> bool:
        await self._release_departed(tournament.id, everyone=False)
        now = self._clock.now()
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            if locked.status is not Status.REGISTERING:
                return True
            closing = lobby.registration_closes(locked, now)
            after = lobby.close_registration(locked) if closing else locked
            await uow.tournaments.save(after, needs_work=closing)
            await uow.commit()
        return closing

    async def _cancelling(self, tournament: Tournament) -> bool:
        await self._release_unused_tickets(tournament.id)
        await self._release_departed(tournament.id, everyone=True)
        added = await self._added_prize_hold(tournament)
        if added:
            await self._wallet.release_hold(added, "tournament cancelled")
        now = self._clock.now()
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            cancelled = uow.event(
                messages.TOPIC,
                locked.id,
                events_pb2.TournamentCancelled(
                    tournament_id=locked.id,
                    reason=locked.cancel_reason,
                    occurred_at=messages.timestamp(now),
                ),
            )
            await uow.tournaments.save(
                lobby.cancelled(locked, now), needs_work=False, events=[cancelled]
            )
            await uow.commit()
        log.info("tournament_cancelled", tournament_id=tournament.id)
        return False

    async def _release_departed(self, tournament_id: str, *, everyone: bool) -> None:
        reason = "tournament cancelled" if everyone else "left the tournament before its start"
        async with self._reads() as uow:
            entries = await uow.tournaments.to_release(tournament_id, everyone=everyone)
        for entrant in entries:
            for hold_id in entrant.hold_ids:
                await self._wallet.release_hold(hold_id, reason)
            async with self._uow() as uow:
                await uow.tournaments.mark_released(
                    tournament_id, entrant.account_id, self._clock.now()
                )
                await uow.commit()

    async def _release_unused_tickets(self, target_id: str) -> None:
        """Tickets to a tournament that closed without them go back to their holders."""
        async with self._reads() as uow:
            unused = await uow.tournaments.unused_tickets(target_id)
        for ticket in unused:
            for hold_id in (ticket.buy_in_hold_id, ticket.fee_hold_id):
                if hold_id:
                    await self._wallet.release_hold(hold_id, "the ticket's target closed unused")
            async with self._uow() as uow:
                await uow.tournaments.mark_ticket_released(ticket, self._clock.now())
                await uow.commit()
            log.info("tournament_ticket_released", target_id=target_id,
                     satellite_id=ticket.satellite_id, account_id=ticket.account_id)

    async def _seated(self, tournament: Tournament) -> bool:
        await self._release_unused_tickets(tournament.id)
        now = self._clock.now()
        if not lobby.start_due(tournament, now):
            return False
        await self._added_prize_hold(tournament)  # held before play: the pool is whole
        fee_holds = [e.fee_hold_id for e in tournament.entrants if e.fee_hold_id]
        if fee_holds:
            await self._wallet.settle_pool(
                tournament.id, fee_holds, tournament.rules.currency,
                tournament.house_revenue, {}, f"{tournament.id}:fees",
            )
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            if locked.status is not Status.SEATED:
                return True
            after = lobby.started(locked, now)
            started = uow.event(messages.TOPIC, locked.id, _started(after, now))
            await uow.tournaments.save(after, needs_work=True, events=[started])
            await uow.commit()
        log.info("tournament_started", tournament_id=tournament.id,
                 entrants=len(tournament.entrants))
        return True

    async def _running(self, tournament: Tournament) -> bool:
        bracket = tournament.bracket
        assert bracket is not None  # a running tournament was drawn
        slots = asyncio.Semaphore(GAMES_AT_ONCE)
        failed: list[Exception] = []
        left: list[bool | None] = []  # what each game recorded left the driver (None: unknown)

        async def create(match: brackets.Match) -> None:
            async with slots:
                if failed:
                    return  # after a failure no new call: the next pass retries
                try:
                    left.append(await self._create_game(tournament, match, price))
                except Exception as error:  # the calls under way still finish and record
                    failed.append(error)

        price = await self._ticket_price(tournament)
        to_play = lobby.matches_to_play(tournament, price)
        await asyncio.gather(*(create(match) for match in to_play))
        if failed:
            raise failed[0]
        if lobby.prizes_due(tournament, price):
            await self._pay(tournament)
            return False
        if to_play and None not in left:
            # Each game's transaction set the flag from the state it locked (a result
            # committed since sets it itself), so the last one's is right: none saw work
            # left, nothing is; one did (another ready match), and the next step looks.
            return any(left)
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            work = _work_left(locked, price)
            await uow.tournaments.save(locked, needs_work=work)
            await uow.commit()
        return work

    async def _ticket_price(self, tournament: Tournament) -> int:
        """A satellite's ticket worth, from its target (0 for a cash tournament): what
        decides how many tickets its drawn field wins and so which rounds it plays."""
        if tournament.rules.kind is not Kind.SATELLITE:
            return 0
        return (await self._load(tournament.rules.target_tournament_id)).rules.ticket_price

    async def _create_game(
        self, tournament: Tournament, match: brackets.Match, ticket_price: int
    ) -> bool | None:
        """Create the match's game and record it; whether the state it recorded leaves the
        driver work (another match to create, the prizes), which its save flags; None when
        it recorded nothing of the kind (the game recorded already, a forfeit)."""
        async with self._reads() as uow:
            excluded = await uow.tournaments.excluded(brackets.order_of(match), self._clock.now())
        if excluded:
            await self._forfeit(tournament.id, match, sorted(excluded)[0])
            return None
        rules = tournament.rules
        length = rules.match_length(match.round)
        players = [
            game_pb2.Player(account_id=player, display_name=player[:8])
            for player in brackets.order_of(match)
        ]
        table_rules = game_pb2.TableRules(
            kind=game_pb2.PLAY_KIND_MATCH,
            match_length=length,
            # The match itself is staked on nothing: the tournament holds and pays its money.
            stake=messages.money(0, PLAY),
            beaver=rules.beaver,
            jacoby=rules.jacoby,
            crawford=rules.crawford,
            clock=game_pb2.ClockPreset(name=rules.clock),
            # A real-money tournament's match moves both ratings as a real-money match does;
            # a play-money one's does not (services/matchmaking/ratings/results.py).
            rated=rules.currency != PLAY,
        )
        game_id = await self._games.create_game(
            tournament.id, players, table_rules, f"{tournament.id}:{match.id}"
        )
        now = self._clock.now()
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            assert locked.bracket is not None
            applied = brackets.start(locked.bracket, match.id, game_id)
            if not applied.changed:
                return None
            after = lobby.with_bracket(locked, applied.bracket)
            work = _work_left(after, ticket_price)
            started = uow.event(
                messages.TOPIC,
                locked.id,
                events_pb2.MatchStarted(
                    tournament_id=locked.id,
                    match_id=match.id,
                    game_id=game_id,
                    players=brackets.order_of(match),
                    match_length=length,
                    occurred_at=messages.timestamp(now),
                ),
            )
            # The lock, this save with its event and the commit: the record's statements.
            await uow.tournaments.save(after, needs_work=work, events=[started])
            await uow.commit()
        log.info("tournament_match_started", tournament_id=tournament.id, match_id=match.id,
                 game_id=game_id)
        return work

    async def _forfeit(self, tournament_id: str, match: brackets.Match, absent: str) -> None:
        """A player who excluded themself since registering plays no more: their match is
        forfeited to the opponent (the game service would refuse to create it)."""
        now = self._clock.now()
        async with self._uow() as uow:
            locked = await _locked(uow, tournament_id)
            assert locked.bracket is not None
            applied = brackets.record_forfeit(
                locked.bracket, match.id, loser=absent, decision=brackets.Decision.NO_SHOW
            )
            if not applied.changed:
                return
            decided = uow.event(
                messages.TOPIC,
                tournament_id,
                events_pb2.MatchDecided(
                    tournament_id=tournament_id,
                    match_id=match.id,
                    winner_account_id=match.opponent(absent) or "",
                    loser_account_id=absent,
                    decision=brackets.Decision.NO_SHOW.value,
                    occurred_at=messages.timestamp(now),
                ),
            )
            await uow.tournaments.save(
                lobby.with_bracket(locked, applied.bracket), needs_work=True, events=[decided]
            )
            await uow.commit()
        log.info("tournament_match_forfeited", tournament_id=tournament_id, match_id=match.id,
                 reason="self_excluded")

    async def _pay_tickets(
        self, tournament: Tournament
    ) -> tuple[tuple[lobby.Ticket, ...], dict[str, int]]:
        """A satellite's pool, paid as tickets held at its target for its winners, and what
        the tickets leave as cash to the next finish (the satellite remainder rule)."""
        target = await self._load(tournament.rules.target_tournament_id)
        winners, cash = lobby.satellite_prizes(tournament, target.rules)
        held = await self._wallet.settle_tickets(
            tournament.id,
            [e.buy_in_hold_id for e in tournament.entrants if e.buy_in_hold_id],
            tournament.rules.currency,
            winners,
            TicketTarget(target.id, target.rules.buy_in, target.rules.entry_fee),
            f"{tournament.id}:tickets",
            payouts=cash,
        )
        tickets = tuple(
            lobby.Ticket(tournament.id, winner, target.id, target.rules.ticket_price, *held[winner])
            for winner in winners
        )
        return tickets, cash

    async def _pay(self, tournament: Tournament) -> None:
        if tournament.rules.kind is Kind.SATELLITE:
            tickets, cash = await self._pay_tickets(tournament)
            # Settled, not recorded: the next pass settles by the same key, once.
            failpoint("tournaments.tickets.after_settle")
            await self._finish(tournament, cash, tickets)
            # Read after the tickets committed: a target that closed meanwhile gets them
            # back to their holders here, one that closes later from its own driver.
            target = await self._load(tournament.rules.target_tournament_id)
            if target.status is not Status.REGISTERING:
                await self._release_unused_tickets(target.id)
            return
        awards = lobby.prizes(tournament)
        pool_holds = [e.buy_in_hold_id for e in tournament.entrants if e.buy_in_hold_id]
        added = await self._added_prize_hold(tournament)
        pool_holds += [added] if added else []
        if pool_holds:
            await self._wallet.settle_pool(
                tournament.id, pool_holds, tournament.rules.currency, 0, awards,
                f"{tournament.id}:prizes",
            )
        await self._finish(tournament, awards, ())

    async def _finish(
        self, tournament: Tournament, awards: dict[str, int], tickets: tuple[lobby.Ticket, ...]
    ) -> None:
        now = self._clock.now()
        async with self._uow() as uow:
            locked = await _locked(uow, tournament.id)
            if locked.status is not Status.RUNNING:
                return
            after = replace(lobby.finished(locked, now), tickets=tickets)
            await uow.tournaments.add_tickets(tickets, now)
            finished = uow.event(messages.TOPIC, locked.id, _finished(after, awards, now))
            await uow.tournaments.save(after, needs_work=False, prizes=awards, events=[finished])
            await uow.commit()
        log.info("tournament_finished", tournament_id=tournament.id)

    async def _added_prize_hold(self, tournament: Tournament) -> str:
        """The house hold of the tournament's added prize ("" without one)."""
        rules = tournament.rules
        if not rules.added_prize:
            return ""
        return await hold_added_prize(
            self._wallet, tournament.id, rules.added_prize, rules.currency
        )

    async def _load(self, tournament_id: str) -> Tournament:
        async with self._reads() as uow:
            found = await uow.tournaments.get(tournament_id)
        if found is None:
            raise NotFound(f"no tournament {tournament_id}")
        return found

    async def _status(self, tournament_id: str) -> str:
        try:
            return (await self._load(tournament_id)).status.value
        except Exception:
            return "unknown"


def _work_left(tournament: Tournament, ticket_price: int) -> bool:
    """Whether a running tournament has a game to create or its prizes to pay."""
    return bool(lobby.matches_to_play(tournament, ticket_price)) or lobby.prizes_due(
        tournament, ticket_price
    )


async def _locked(uow: TournamentsUnitOfWork, tournament_id: str) -> Tournament:
    found = await uow.tournaments.get(tournament_id, lock=True)
    if found is None:
        raise NotFound(f"no tournament {tournament_id}")
    return found


def _started(tournament: Tournament, now: datetime) -> events_pb2.TournamentStarted:
    assert tournament.bracket is not None
    currency = tournament.rules.currency
    return events_pb2.TournamentStarted(
        tournament_id=tournament.id,
        seed=tournament.seed.hex(),
        seed_commitment=tournament.commitment,
        seating=list(tournament.bracket.order),
        prize_pool=messages.money(tournament.prize_pool, currency),
        house_revenue=messages.money(tournament.house_revenue, currency),
        occurred_at=messages.timestamp(now),
    )


def _finished(
    tournament: Tournament, awards: dict[str, int], now: datetime
) -> events_pb2.TournamentFinished:
    assert tournament.bracket is not None
    places = {s.player: s for s in brackets.standings(tournament.bracket)}
    return events_pb2.TournamentFinished(
        tournament_id=tournament.id,
        champion_account_id=tournament.bracket.champion or "",
        tickets=[messages.ticket_message(t, tournament.rules.currency) for t in tournament.tickets],
        prizes=[
            events_pb2.Prize(
                account_id=player,
                best_place=places[player].best,
                worst_place=places[player].worst,
                amount=messages.money(amount, tournament.rules.currency),
            )
            for player, amount in sorted(awards.items(), key=lambda item: places[item[0]].best)
        ],
        occurred_at=messages.timestamp(now),
    )
