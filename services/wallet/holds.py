"""Holds: stakes placed, raised and released while a player sits at a table.

A hold is refused in a currency without a commission schedule in force (its game
could not be settled), and ``claim_holds`` is how the game service confirms both
seats' stakes are held, and binds them to the game, before it creates a real-money
game. ``place_holds`` places a seating's holds (both seats') in one transaction, all
or none: one call and one commit where two ``place_hold`` calls took two of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import IntegrityError

from services.kit.clock import protobuf_timestamp
from services.kit.errors import InvalidArgument, NotFound
from services.kit.money_bounds import Bound
from services.wallet.domain.errors import (
    AccountFrozen,
    AccountNotVerified,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidHoldState,
    LimitExceeded,
    SelfExcluded,
)
from services.wallet.domain.holds import (
    HOUSE_HOLDER,
    CoverCheck,
    Hold,
    HoldChange,
    HoldStatus,
    can_cover,
    claim_stake_hold,
    place_house_hold,
)
from services.wallet.domain.holds import place_hold as domain_place_hold
from services.wallet.domain.holds import raise_hold as domain_raise_hold
from services.wallet.domain.holds import void_hold as domain_void_hold
from services.wallet.domain.ledger import (
    AccountKind,
    Ledger,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.limits import check_play
from services.wallet.domain.money import Money, require_positive
from services.wallet.domain.schedule import require_playable_currency
from services.wallet.ids import derived_id, require_account_id, require_id, require_key
from services.wallet.limits import play_limits
from services.wallet.messages import TOPIC, money_message
from services.wallet.posting import Transaction, post_locked, post_transfers
from services.wallet.store.holds import StoredHold
from services.wallet.store.unit_of_work import WalletUnitOfWork
from services.wallet.use_case import UseCases
from tavla.wallet.v1 import events_pb2

# What stops one player's hold (their balance, their own limits or account state): in a
# batch, nothing is placed and the answer names that hold.
PLAYER_REFUSALS = (
    InsufficientFunds, SelfExcluded, AccountFrozen, AccountNotVerified, LimitExceeded
)


@dataclass(frozen=True)
class HoldRequest:
    """One hold of a batch, as ``place_hold`` takes it."""

    player_id: str
    amount: Money
    table_id: str
    game_id: str
    idempotency_key: str


@dataclass(frozen=True)
class HoldRefused:
    """Nothing of a batch was placed: the hold at ``index`` (its ``player_id``) could not be.
    ``placed_before``: those of the batch an earlier call had placed (a replay after a
    crash), which its caller may release."""

    index: int
    player_id: str
    reason: str
    placed_before: list[StoredHold]


class HoldUseCases(UseCases):
    """Placing, raising and releasing holds, and checking a player can cover a stake."""

    async def place_hold(
        self, *, player_id: str, amount: Money, table_id: str, game_id: str, idempotency_key: str
    ) -> StoredHold:
        require_account_id(player_id, "account_id")
        require_id(table_id, "table_id")
        require_playable_currency(amount.currency, self._clock.now())
        self._within(Bound.TABLE_EXPOSURE, amount)
        hold_id = derived_id("hold", player_id, require_key(idempotency_key))
        try:
            return await self._place_hold(
                hold_id, player_id, amount, table_id, game_id, idempotency_key
            )
        except IntegrityError:  # the same request committed first
            async with self._uow() as uow:
                existing = await uow.holds.get(hold_id)
            if existing is None:
                raise
            return _replayed_hold(existing, player_id, table_id, amount)

    async def _place_hold(
        self, hold_id: str, player_id: str, amount: Money, table_id: str, game_id: str, key: str
    ) -> StoredHold:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.holds.get(hold_id)
            if existing is not None:
                return _replayed_hold(existing, player_id, table_id, amount)
            state = await uow.players.get(player_id, now)
            check_play(play_limits(state, amount.currency), now)
            account = player_account_id(player_id, amount.currency)
            ledger = await _lock_for_new_holds(uow, [(player_id, amount.currency)])
            change = domain_place_hold(
                hold_id, player_id, table_id, amount, ledger.balance(account), game_id or None
            )
            if change.transfer is not None:
                await post_locked(uow, ledger, [change.transfer], now)
            await uow.holds.add(change.hold, key, now)
            uow.publish(TOPIC, player_id, _hold_placed(change.hold, now))
            await uow.commit()
        return StoredHold(change.hold, key, now)

    async def add_to_pool(
        self, *, table_id: str, amount: Money, idempotency_key: str
    ) -> StoredHold:
        """House money into a tournament's pool: a house hold at ``table_id`` from the
        house's prize fund, within the operator's ``ADDED_PRIZE`` bound; the same key
        again answers the same hold."""
        require_id(table_id, "table_id")
        require_playable_currency(amount.currency, self._clock.now())
        require_positive(amount, "an added prize")
        self._within(Bound.ADDED_PRIZE, amount)
        hold_id = derived_id("hold", HOUSE_HOLDER, require_key(idempotency_key))
        try:
            return await self._add_to_pool(hold_id, table_id, amount, idempotency_key)
        except IntegrityError:  # the same request committed first
            async with self._uow() as uow:
                existing = await uow.holds.get(hold_id)
            if existing is None:
                raise
            return _replayed_hold(existing, HOUSE_HOLDER, table_id, amount)

    async def _add_to_pool(
        self, hold_id: str, table_id: str, amount: Money, key: str
    ) -> StoredHold:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.holds.get(hold_id)
            if existing is not None:
                return _replayed_hold(existing, HOUSE_HOLDER, table_id, amount)
            change = place_house_hold(hold_id, table_id, amount)
            assert change.transfer is not None  # a house hold is positive
            await post_transfers(uow, [change.transfer], now)
            await uow.holds.add(change.hold, key, now)
            uow.publish(TOPIC, HOUSE_HOLDER, _hold_placed(change.hold, now))
            await uow.commit()
        return StoredHold(change.hold, key, now)

    async def place_holds(self, requests: Sequence[HoldRequest]) -> list[StoredHold] | HoldRefused:
        """Every hold of ``requests`` placed in one transaction, in their order, or none.

        Each is the hold ``place_hold`` would place for it, on its own idempotency key: a
        replay of the batch, or of a hold once placed alone, places nothing twice. A
        refusal of one player's hold (see ``PLAYER_REFUSALS``) places none and is answered
        as ``HoldRefused``; a malformed request is refused whole (``InvalidArgument``).
        """
        hold_ids = [self._checked_hold(request) for request in requests]
        if not requests:
            raise InvalidArgument("holds: at least one hold to place")
        if len({r.player_id for r in requests}) != len(requests):
            raise InvalidArgument("holds: one hold per account in a call")
        try:
            return await self._place_holds(hold_ids, requests)
        except IntegrityError:  # a concurrent replay committed some of them first: replay them
            return await self._place_holds(hold_ids, requests)

    def _checked_hold(self, request: HoldRequest) -> str:
        """The hold id of a well-formed request (what ``place_hold`` checks first)."""
        require_account_id(request.player_id, "account_id")
        require_id(request.table_id, "table_id")
        require_playable_currency(request.amount.currency, self._clock.now())
        self._within(Bound.TABLE_EXPOSURE, request.amount)
        return derived_id("hold", request.player_id, require_key(request.idempotency_key))

    async def _place_holds(
        self, hold_ids: Sequence[str], requests: Sequence[HoldRequest]
    ) -> list[StoredHold] | HoldRefused:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.holds.get_many(hold_ids, lock=False)
            replayed = {
                hold_id: _replayed_hold(existing[hold_id], r.player_id, r.table_id, r.amount)
                for hold_id, r in zip(hold_ids, requests, strict=True)
                if hold_id in existing
            }
            new = [
                (index, hold_id, r)
                for index, (hold_id, r) in enumerate(zip(hold_ids, requests, strict=True))
                if hold_id not in existing
            ]
            ledger = await _lock_for_new_holds(
                uow, [(r.player_id, r.amount.currency) for _, _, r in new]
            )
            states = await uow.players.get_many([r.player_id for _, _, r in new], now)
            changes: list[tuple[HoldRequest, HoldChange]] = []
            for index, hold_id, r in new:
                try:
                    state = states[r.player_id]
                    check_play(play_limits(state, r.amount.currency), now)
                    balance = ledger.balance(player_account_id(r.player_id, r.amount.currency))
                    change = domain_place_hold(
                        hold_id, r.player_id, r.table_id, r.amount, balance, r.game_id or None
                    )
                except PLAYER_REFUSALS as refused:  # rolled back: nothing of this call stays
                    earlier = [replayed[h] for h in hold_ids if h in replayed]
                    return HoldRefused(index, r.player_id, str(refused), earlier)
                changes.append((r, change))
            transfers = [change.transfer for _, change in changes if change.transfer is not None]
            if transfers:
                await post_locked(uow, ledger, transfers, now)
            await uow.holds.add_many([(c.hold, r.idempotency_key) for r, c in changes], now)
            for r, change in changes:
                uow.publish(TOPIC, r.player_id, _hold_placed(change.hold, now))
            await uow.commit()
        placed = {c.hold.id: StoredHold(c.hold, r.idempotency_key, now) for r, c in changes}
        return [replayed.get(hold_id) or placed[hold_id] for hold_id in hold_ids]

    async def raise_hold(self, *, hold_id: str, new_amount: Money, game_id: str) -> StoredHold:
        self._within(Bound.TABLE_EXPOSURE, new_amount)
        now = self._clock.now()
        async with self._uow() as uow:
            stored = await _locked_hold(uow, hold_id)
            hold = stored.hold
            if hold.by_house:
                raise InvalidHoldState(f"hold {hold.id} is house money in a pool; not raised")
            account = player_account_id(hold.player_id, hold.currency)
            ledger = await uow.ledger.load([account])
            change = domain_raise_hold(hold, new_amount, ledger.balance(account), game_id or None)
            if change.hold == hold:
                return stored  # a retry of a raise already made: nothing moves twice
            if change.transfer is not None:
                await post_transfers(uow, [change.transfer], now)
            await uow.holds.save(change.hold, now)
            uow.publish(
                TOPIC,
                hold.player_id,
                events_pb2.HoldRaised(
                    account_id=hold.player_id,
                    hold_id=hold.id,
                    previous_amount=money_message(change.previous_amount),
                    new_amount=money_message(change.hold.amount),
                    game_id=change.hold.game_id or "",
                    occurred_at=protobuf_timestamp(now),
                ),
            )
            await uow.commit()
        return StoredHold(change.hold, stored.idempotency_key, stored.created_at)

    async def release_hold(self, *, hold_id: str, reason: str) -> StoredHold:
        async with self._uow() as uow:
            stored = await _locked_hold(uow, hold_id)
            [released] = await void(uow, [stored], reason, self._clock.now())
            await uow.commit()
        return released

    async def can_cover(self, *, player_id: str, amount: Money, hold_id: str) -> CoverCheck:
        self._within(Bound.TABLE_EXPOSURE, amount)
        async with self._uow() as uow:
            hold: Hold | None = None
            if hold_id:
                stored = await uow.holds.get(hold_id)
                if stored is None:
                    raise NotFound(f"no hold {hold_id}")
                hold = stored.hold
            balance = await uow.ledger.balance(player_account_id(player_id, amount.currency))
        available = balance.net if balance else Money.zero(amount.currency)
        return can_cover(hold, amount, available)

    async def claim_holds(
        self, *, table_id: str, game_id: str, seats: Sequence[tuple[str, str]], required: Money
    ) -> list[StoredHold]:
        """Bind each (player, hold id) seat's stake to ``game_id``, once it is verified.

        The game service asks before it creates a real-money game and creates it only
        if every seat's hold is open, that player's, at that table, in that currency,
        covers ``required`` and is not staked on another game. Nothing moves: the hold
        only records its game, so no other game can start on it. Claiming again for the
        same game answers the same (a retried CreateGame).
        """
        require_id(table_id, "table_id")
        require_id(game_id, "game_id")
        require_positive(required, "the stake to hold")
        require_playable_currency(required.currency, self._clock.now())
        self._within(Bound.TABLE_EXPOSURE, required)
        for player_id, hold_id in seats:
            require_account_id(player_id, "account_id")
            require_id(hold_id, f"hold_id of {player_id}")
        now = self._clock.now()
        async with self._uow() as uow:
            found = await uow.holds.get_many([hold_id for _, hold_id in seats], lock=True)
            claimed = []
            changed = []
            for player_id, hold_id in seats:
                stored = found.get(hold_id)
                held = None if stored is None else stored.hold
                hold = claim_stake_hold(held, hold_id, player_id, table_id, game_id, required)
                if hold != held:
                    changed.append(hold)
                claimed.append(
                    StoredHold(hold, found[hold_id].idempotency_key, found[hold_id].created_at)
                )
            await uow.holds.save_many(changed, now)
            await uow.commit()
        return claimed


def _replayed_hold(
    existing: StoredHold, player_id: str, table_id: str, amount: Money
) -> StoredHold:
    hold = existing.hold
    # A raised hold replays its placement too: compare what was asked, not what it became.
    same = hold.player_id == player_id and hold.table_id == table_id
    if not same or hold.currency != amount.currency or hold.amount < amount:
        raise IdempotencyConflict(
            f"idempotency key {existing.idempotency_key!r} already placed hold {hold.id} of "
            f"{hold.amount} for table {hold.table_id}; use a new key for a new hold"
        )
    return existing


async def _lock_for_new_holds(
    tx: Transaction, accounts: Sequence[tuple[str, str]]
) -> Ledger:
    """What placing holds for these (player, currency) posts to, in one round trip: the
    players' accounts locked (sorted) and the held-stakes accounts of those currencies.

    A new hold's transfer is named after the hold, written in the same transaction, so
    no transfer of it is looked up (the transfers' key would refuse one anyway). A
    player without an account in the currency gets one, opened as ``lock_ledger`` does.
    """
    players = {player_account_id(player, currency) for player, currency in accounts}
    systems = {system_account_id(AccountKind.HELD_STAKES, currency) for _, currency in accounts}
    ledger = await tx.ledger.load(players | systems)
    missing = sorted(
        (player, currency)
        for player, currency in set(accounts)
        if player_account_id(player, currency) not in ledger.accounts
    )
    if missing:
        for player, currency in missing:
            await tx.ledger.open_player_accounts(player, [currency])
        ledger = await tx.ledger.load(players | systems)
    return ledger


async def _locked_hold(uow: WalletUnitOfWork, hold_id: str) -> StoredHold:
    require_id(hold_id, "hold_id")
    stored = await uow.holds.get(hold_id, lock=True)
    if stored is None:
        raise NotFound(f"no hold {hold_id}; place it with PlaceHold first")
    return stored


def _hold_placed(hold: Hold, now: datetime) -> events_pb2.HoldPlaced:
    return events_pb2.HoldPlaced(
        account_id=hold.player_id,
        hold_id=hold.id,
        amount=money_message(hold.amount),
        table_id=hold.table_id,
        game_id=hold.game_id or "",
        occurred_at=protobuf_timestamp(now),
    )


async def void(
    tx: Transaction, held: Sequence[StoredHold], reason: str, now: datetime
) -> list[StoredHold]:
    """Give locked holds back to their players in one batch (its accounts are locked in
    the ledger's order); holds released already change nothing."""
    open_holds = [stored for stored in held if stored.hold.status is not HoldStatus.VOIDED]
    changes = [(stored, domain_void_hold(stored.hold)) for stored in open_holds]
    transfers = [change.transfer for _, change in changes if change.transfer is not None]
    if transfers:
        await post_transfers(tx, transfers, now)
    released = {stored.hold.id: stored for stored in held}
    for stored, change in changes:
        await tx.holds.save(change.hold, now, release_reason=reason or "released")
        tx.publish(
            TOPIC,
            change.hold.player_id,
            events_pb2.HoldReleased(
                account_id=change.hold.player_id,
                hold_id=change.hold.id,
                amount=money_message(change.previous_amount),
                reason=reason,
                occurred_at=protobuf_timestamp(now),
            ),
        )
        released[change.hold.id] = StoredHold(
            change.hold, stored.idempotency_key, stored.created_at
        )
    return [released[stored.hold.id] for stored in held]


async def release_cancelled(
    tx: Transaction, table_id: str, hold_ids: Sequence[str], reason: str, now: datetime
) -> int:
    """A cancelled game's holds go back to their players; returns how many were released.

    Holds already posted or released, or belonging to another table, are left alone.
    """
    locked = await tx.holds.get_many(hold_ids, lock=True)
    eligible = [
        stored
        for stored in locked.values()
        if stored.hold.table_id == table_id and stored.hold.status is HoldStatus.OPEN
    ]
    await void(tx, eligible, reason, now)
    return len(eligible)
