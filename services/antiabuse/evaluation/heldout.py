"""The held-out population: a month of a platform's facts, generated from parameters (pure).

The tuning population (``population.py``, played through the gateway by ``tavla abuse
eval``) is what the detectors were written against, with the tests' seeds. This one is
generated from :class:`WorldParams` with other parameters and other seeds, and is never
used to tune a threshold: when a detector misses here the detector changes (with its
reason in its docstring), never these figures. It is big enough for a false-positive
rate below 1 % to mean something (at least 500 honest accounts: the Wilson upper bound
of 0 of 500 is 0.76 %), so it is not played move by move: each session becomes the
events the services publish about it (the accounts', the geo check's, the game's, the
wallet's, matchmaking's and the analysis'), built with their protos, in time order, and
``feed.py`` applies them to the real anti-abuse consumer's handlers on PostgreSQL.

The honest half can produce every false positive we know of: world-class and expert
players (PR 2 to 5) who play many sessions; friends and households who play each other
dozens of times with fair results (a household also shares its address); players behind
one carrier NAT (one public address, one /24, one /64, or carrier-grade NAT 100.64/10);
an internet café (a few shared computers, one address, many players); honest
disconnections and timeouts at a base rate, in losing and winning positions alike (where
play stopped is drawn around even, and the share of losing stops is measured and
printed); flaky connections that drop several times a week; drops that come back within
the reconnect window beside those that do not, at each player's own chance (most 0.6 to
0.95, a tenth 0.2 to 0.6: the README's "Drops that come back"); ordinary table talk ("next
game?", "the other table", "what a roll", "gg, another game?"); fast players on forced
moves; weak players resigning lost games.

The abusive half does not announce itself: consultants who never chat, bots that play
the second-best play 10 to 20 % of the time with human think times, dumpers who mix in
honest games, multi-accounters with separate devices and addresses who pay with one card,
win traders who do not alternate every time, disconnecters who walk away only from some
losing games (a walk never comes back), harassers and spammers some of whose spellings
pass moderation. Every abuser's amount of play is drawn from a range (never the
detector's minimum).

Decisions are graded as the analysis grades them (``decisions.py``: the engine's ranking
of real positions, a player's policy applied to it).
"""

from __future__ import annotations

import ipaddress
import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from google.protobuf.message import Message

from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation.decisions import (
    PositionPool,
    bot_choice,
    person_choice,
    rank_of,
    tau_for,
)
from services.game import moderation
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.analysis.v1 import analysis_pb2
from tavla.analysis.v1 import events_pb2 as analysis
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2 as matchmaking
from tavla.wallet.v1 import events_pb2 as wallet
from tavla.wallet.v1 import wallet_pb2


class Kind(StrEnum):
    HONEST = "honest"
    BOT = "bot"
    CONSULTANT = "consultant"
    DUMP_GIVER = "dump_giver"
    DUMP_RECEIVER = "dump_receiver"
    MULTI = "multi_accounter"
    TRADER = "win_trader"
    DISCONNECTER = "disconnecter"
    HARASSER = "harasser"
    SPAMMER = "spammer"


@dataclass(frozen=True)
class Tier:
    share: float
    pr: tuple[float, float]  # performance rating range (500 x error per decision)


@dataclass(frozen=True)
class WorldParams:
    """Everything that shapes a population, as data. Ranges are (low, high), inclusive."""

    name: str
    seed: int
    honest: int
    days: int
    tiers: tuple[Tier, ...]
    sessions: tuple[int, int]  # an honest account's sessions in the month
    strong_sessions: tuple[int, int]  # PR below 5: they play more (and are judged)
    friend_pairs: int
    friend_games: tuple[int, int]
    households: int  # 2 or 3 accounts at one address, own devices and cards
    nat_groups: tuple[int, ...]  # accounts behind one public carrier address each
    network_groups: tuple[int, ...]  # accounts in one /24 (own addresses)
    v6_groups: tuple[int, ...]  # accounts in one /64
    cgnat: int  # accounts calling from 100.64/10
    cafe: tuple[int, int]  # (accounts, shared computers) at one café address
    drop_rate: float  # chance an honest session ends by a disconnection
    timeout_rate: float
    flaky: int  # honest accounts whose connection drops often
    flaky_drop_rate: float
    comes_back: tuple[float, float]  # most players' chance that a drop comes back in time
    comes_back_rarely: tuple[float, float, float]  # (share of players, low, high) for the rest
    resign_rate: float  # a lost game resigned
    fast_forced: float  # share of honest players who move forced plays at once
    chat_rate: float  # share of sessions with table talk
    bots: int
    bot_sessions: tuple[int, int]
    bot_second_best: tuple[float, float]
    consultants: int  # people, two accounts each
    consulted_sessions: tuple[int, int]  # both accounts seated at once
    consultant_solo: tuple[int, int]
    dumpers: int  # pairs
    dumped_games: tuple[int, int]
    dumper_honest: tuple[int, int]
    multi: int  # people
    multi_accounts: tuple[int, int]
    multi_sessions: tuple[int, int]
    traders: int  # pairs
    traded_sessions: tuple[int, int]
    trade_alternation: tuple[float, float]
    disconnecters: int
    disconnecter_sessions: tuple[int, int]
    walk_share: tuple[float, float]  # losing games it walks away from
    harassers: int
    harasser_sessions: tuple[int, int]
    spammers: int
    spammer_sessions: tuple[int, int]


HELD_OUT = WorldParams(
    name="held-out", seed=20_261_205, honest=540, days=28,
    tiers=(Tier(0.04, (2.0, 3.0)), Tier(0.08, (3.0, 5.0)), Tier(0.2, (5.0, 7.5)),
           Tier(0.3, (7.5, 11.0)), Tier(0.25, (11.0, 16.0)), Tier(0.13, (16.0, 22.0))),
    sessions=(1, 3), strong_sessions=(4, 10), friend_pairs=10, friend_games=(12, 30),
    households=8, nat_groups=(30, 18), network_groups=(16,), v6_groups=(12,), cgnat=25,
    cafe=(24, 4), drop_rate=0.03, timeout_rate=0.015, flaky=12, flaky_drop_rate=0.25,
    comes_back=(0.6, 0.95), comes_back_rarely=(0.1, 0.2, 0.6),
    resign_rate=0.3, fast_forced=0.4, chat_rate=0.35,
    bots=12, bot_sessions=(5, 18), bot_second_best=(0.10, 0.20),
    consultants=8, consulted_sessions=(3, 10), consultant_solo=(2, 6),
    dumpers=8, dumped_games=(4, 12), dumper_honest=(2, 8),
    multi=10, multi_accounts=(2, 3), multi_sessions=(2, 6),
    traders=8, traded_sessions=(6, 14), trade_alternation=(0.8, 1.0),
    disconnecters=12, disconnecter_sessions=(8, 20), walk_share=(0.5, 1.0),
    harassers=10, harasser_sessions=(2, 6), spammers=8, spammer_sessions=(1, 4),
)  # fmt: skip

LABELS: dict[Kind, frozenset[Detector]] = {
    Kind.HONEST: frozenset(),
    Kind.BOT: frozenset({Detector.ASSISTANCE}),
    Kind.CONSULTANT: frozenset({Detector.CONSULTING, Detector.MULTI_ACCOUNTING}),
    Kind.DUMP_GIVER: frozenset({Detector.CHIP_DUMPING}),
    Kind.DUMP_RECEIVER: frozenset({Detector.CHIP_DUMPING}),
    Kind.MULTI: frozenset({Detector.MULTI_ACCOUNTING}),
    Kind.TRADER: frozenset({Detector.RATING_MANIPULATION}),
    Kind.DISCONNECTER: frozenset({Detector.DELIBERATE_DISCONNECT}),
    Kind.HARASSER: frozenset({Detector.CHAT_ABUSE}),
    Kind.SPAMMER: frozenset({Detector.CHAT_ABUSE}),
}

HONEST_TALK = (
    "gl", "gg", "hi", "good luck", "gl hf", "thanks, you too", "nice roll", "what a roll",
    "next game?", "gg, another game?", "see you next game", "one more?", "wp", "unlucky",
    "sorry, my wifi dropped", "brb", "the other table was faster lol", "i was at the other "
    "table all night", "ty", "well played", "ouch", "that double was brave", "lol",
    "another game tomorrow?", "my second game today", "nice game", "gg wp",
)  # fmt: skip
INSULTS = (  # some on moderation's list, some spelled past it
    "you idiot", "loser", "what an idiot", "l0ser", "i d i o t", "id1ot", "cl0wn", "n00b",
    "you are a moron", "stupid noob", "idiot", "shut up loser",
)
SPAM = (
    "visit my-site d0t c0m for free chips", "buy cheap chips at www.chipz.com",
    "add me on telegram for a bonus code", "promo code WIN50 at bestbg.io",
    "earn 500 dollars a day, dm me on whatsapp", "cheap accounts for sale, telegram me",
)
PROVIDER = "sandbox"


@dataclass(frozen=True)
class Account:
    account_id: str
    kind: Kind
    pr: float  # playing strength (people); a bot's noise in second_best
    device: str
    address: str
    card: str
    forced_fast: bool = False
    think: float = 6.0  # median seconds of a checker play
    spread: float = 0.8  # sd of log seconds
    second_best: float = 0.0
    walk_share: float = 0.0
    drop_rate: float = 0.0
    comes_back: float = 0.0  # the chance a drop of theirs comes back within the window
    extra_devices: tuple[str, ...] = ()  # a café's other computers
    extra_labels: frozenset[Detector] = frozenset()  # a dumper who is one person

    @property
    def labels(self) -> frozenset[Detector]:
        return LABELS[self.kind] | self.extra_labels


@dataclass(frozen=True)
class Fact:
    at: datetime
    topic: str
    key: str
    message: Message


@dataclass
class World:
    params: WorldParams
    accounts: dict[str, Account] = field(default_factory=dict)
    facts: list[Fact] = field(default_factory=list)
    stops: list[float] = field(default_factory=list)  # honest stops: the stopper's share
    returns: int = 0  # honest drops that came back within the window

    def of(self, kind: Kind) -> list[Account]:
        return [a for a in self.accounts.values() if a.kind is kind]

    @property
    def losing_stop_share(self) -> float:
        """The measured base rate: the share of honest stops at a losing position (<= 0.4)."""
        return sum(s <= 0.4 for s in self.stops) / len(self.stops) if self.stops else 0.0


START = datetime(2026, 11, 2, tzinfo=UTC)


class _Builder:
    def __init__(self, params: WorldParams, pool: PositionPool) -> None:
        self.p = params
        self.pool = pool
        self.rng = random.Random(params.seed)
        self.world = World(params)
        self.taus: dict[float, float] = {}
        self.ratings: dict[str, float] = {}
        self.logged: set[tuple[str, int]] = set()
        self.recent_chat: dict[str, list[moderation.Recent]] = {}
        self.networks = self._networks()

    # -- identities ---------------------------------------------------------------
    def _id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _networks(self) -> Iterator[ipaddress.IPv4Network]:
        """Distinct public /24s (a home, a carrier's pool), from 81.0.0.0 upwards."""
        for number in self.rng.sample(range(1, 250 * 250), 250 * 250 - 1):
            yield ipaddress.IPv4Network(f"{81 + number // 62500 % 100}.{number // 250 % 250}."
                                        f"{number % 250}.0/24")

    def _home(self) -> str:
        return str(next(self.networks)[self.rng.randrange(2, 250)])

    def _pr(self) -> float:
        tier = self.rng.choices(self.p.tiers, weights=[t.share for t in self.p.tiers])[0]
        return self.rng.uniform(*tier.pr)

    def _tau(self, pr: float) -> float:
        key = round(pr, 1)
        if key not in self.taus:
            self.taus[key] = tau_for(self.pool, key / 500)
        return self.taus[key]

    def account(self, kind: Kind, *, pr: float | None = None, device: str = "",
                address: str = "", card: str = "", **extra: object) -> Account:
        rng = self.rng
        made = Account(
            account_id=self._id(), kind=kind, pr=self._pr() if pr is None else pr,
            device=device or self._id(), address=address or self._home(),
            card=card or self._id().replace("-", "")[:24],
            forced_fast=rng.random() < self.p.fast_forced, think=rng.uniform(3.0, 14.0),
            spread=rng.uniform(0.6, 1.0), comes_back=self._comes_back(),
            **extra,  # type: ignore[arg-type]
        )
        self.world.accounts[made.account_id] = made
        self.ratings[made.account_id] = 1500.0
        at = START + timedelta(minutes=rng.uniform(0, 600))
        self._emit(at, "tavla.accounts.v1", made.account_id, accounts.AccountRegistered(
            account_id=made.account_id, email=f"{made.account_id[:12]}@example.org",
            display_name=f"player{made.account_id[:6]}", residence="MT", country_code="MT"))
        self._emit(at + timedelta(minutes=1), "tavla.wallet.v1", made.account_id,
                   wallet.Deposited(account_id=made.account_id, deposit_id=self._id(),
                                    amount=money_pb2.Money(minor_units=20_000, currency="USD"),
                                    provider=PROVIDER, provider_reference=self._id(),
                                    instrument_fingerprint=made.card))
        return made

    def _comes_back(self) -> float:
        share, low, high = self.p.comes_back_rarely
        return self.rng.uniform(low, high) if self.rng.random() < share else self.rng.uniform(
            *self.p.comes_back)

    def _emit(self, at: datetime, topic: str, key: str, message: Message) -> None:
        occurred = message.DESCRIPTOR.fields_by_name.get("occurred_at")
        if occurred is not None:
            message.occurred_at.FromDatetime(at)  # type: ignore[attr-defined]
        self.world.facts.append(Fact(at, topic, key, message))

    def _login(self, player: Account, at: datetime) -> None:
        day = int((at - START).total_seconds() // 86_400)
        if (player.account_id, day) in self.logged:
            return
        self.logged.add((player.account_id, day))
        device = player.device
        if player.extra_devices:  # a café: whichever computer is free
            device = self.rng.choice((player.device, *player.extra_devices))
        self._emit(at - timedelta(minutes=1), "tavla.accounts.v1", player.account_id,
                   accounts.LoggedIn(account_id=player.account_id, device_id=device,
                                     ip_address=player.address, session_id=self._id(),
                                     country="MT"))

    # -- a session ------------------------------------------------------------------
    def _think(self, player: Account, kind: str) -> float:
        if kind == "forced" and player.forced_fast:
            return math.exp(self.rng.gauss(math.log(0.8), 0.4))
        median = player.think * (0.5 if kind == "forced" else 1.6 if kind == "cube" else 1.0)
        return min(120.0, math.exp(self.rng.gauss(math.log(median), player.spread)))

    def _decisions(self, player: Account, game_no: int, *, engine: bool = False,
                   throwing: bool = False, slow: float = 1.0,
                   count: int | None = None) -> list[analysis_pb2.DecisionAnalysis]:
        """One player's decisions in a game: checker plays (some forced) and cube actions."""
        rng = self.rng
        made: list[analysis_pb2.DecisionAnalysis] = []
        for _ in range(rng.randint(16, 30) if count is None else count):
            seconds = self._think(player, "checker") * slow
            if rng.random() < self.pool.forced_share:
                made.append(analysis_pb2.DecisionAnalysis(
                    game_number=game_no, kind="checker", counted=False, error=0.0,
                    seconds=self._think(player, "forced") * slow))
                continue
            losses = self.pool.draw(rng)
            if throwing:
                error = losses[-1] * rng.uniform(0.5, 1.0)
                rank = rank_of(losses, error)
            else:
                if engine:
                    picked = bot_choice(losses, player.second_best or 0.05, rng)
                elif player.kind is Kind.BOT:
                    picked = bot_choice(losses, player.second_best, rng)
                else:
                    picked = person_choice(losses, self._tau(player.pr), rng)
                error, rank = losses[picked], picked + 1
            # As the analysis publishes a checker play: its rank, the alternatives' losses.
            made.append(analysis_pb2.DecisionAnalysis(
                game_number=game_no, kind="checker", counted=True, error=error, seconds=seconds,
                rank=rank, second_loss=losses[1],
                third_loss=losses[2] if len(losses) > 2 else None))
        for _ in range(rng.randint(0, 3)):
            bad = (not engine and player.kind is not Kind.BOT
                   and rng.random() < min(0.4, player.pr / 40))
            made.append(analysis_pb2.DecisionAnalysis(
                game_number=game_no, kind=rng.choice(("double", "no_double", "take")),
                counted=True, error=rng.expovariate(1 / 0.04) if bad else 0.0,
                seconds=self._think(player, "cube") * slow))
        return made

    def session(self, a: Account, b: Account, at: datetime, *, winner: Account | None = None,
                a_engine: bool = False, a_slow: float = 1.0, a_throws: bool = False,
                stop: tuple[Account, int, float] | None = None,
                talk: tuple[tuple[Account, str], ...] = (), quiet: bool = False,
                returns: tuple[tuple[Account, int], ...] = (),
                ) -> datetime:
        """One money game of ``a`` against ``b`` from ``at``: every event about it; the time
        it ended. ``stop``: (who, END_REASON_*, their share where play stopped);
        ``returns``: (who, how many of their drops came back within the window)."""
        rng = self.rng
        game_id, table_id = self._id(), self._id()
        self._login(a, at)
        self._login(b, at)
        cut = rng.randint(6, 20) if stop else None
        mine = self._decisions(a, 1, engine=a_engine, throwing=a_throws, slow=a_slow, count=cut)
        theirs = self._decisions(b, 1, count=cut)
        seconds = sum(d.seconds for d in mine + theirs) + 10 * len(mine)
        ended = at + timedelta(seconds=seconds)
        players = [game_pb2.Player(account_id=a.account_id),
                   game_pb2.Player(account_id=b.account_id)]
        self._emit(at, "tavla.game.v1", game_id, game.GameStarted(
            game_id=game_id, table_id=table_id, game_number=1, players=players))
        for player, count in returns:
            for _ in range(count):
                self._drop_and_return(game_id, player, at, ended)
        stake = rng.choice((100, 200, 500, 1000))
        cube = rng.choices((1, 2, 4), weights=(6, 3, 1))[0]
        points = rng.choices((1, 2, 3), weights=(14, 5, 1))[0]
        reason: int = rng.choice((game_pb2.END_REASON_BORNE_OFF, game_pb2.END_REASON_CUBE_DROPPED))
        shares: list[game.SettlementShare] = []
        if stop is not None:
            stopper, reason, share = stop
            other = b if stopper is a else a
            winner = other if share < 0.5 else stopper
            points = 1
            if reason == game_pb2.END_REASON_DISCONNECTION:
                self._emit(ended - timedelta(seconds=5), "tavla.game.v1", game_id,
                           game.PlayerDisconnected(game_id=game_id, game_number=1,
                                                   account_id=stopper.account_id))
                shares = [game.SettlementShare(account_id=stopper.account_id,
                                               share=f"{share:.4f}"),
                          game.SettlementShare(account_id=other.account_id,
                                               share=f"{1 - share:.4f}")]
            else:  # a timeout or a resignation: the game's rules settle, then its valuation
                winner = other
                self._emit(ended + timedelta(seconds=3), "tavla.game.v1", game_id,
                           game.StopValued(
                               game_id=game_id, game_number=1, reason=reason,  # type: ignore[arg-type]
                               kind=game_pb2.PLAY_KIND_MONEY_GAME,
                               account_id=stopper.account_id,
                               opponent_account_id=other.account_id, analysed=True,
                               shares=[game.SettlementShare(account_id=stopper.account_id,
                                                            share=f"{share:.4f}"),
                                       game.SettlementShare(account_id=other.account_id,
                                                            share=f"{1 - share:.4f}")],
                               settlement=game.SettlementFigures(
                                   method="neural_net", on_roll_account_id=stopper.account_id)))
        if winner is None:
            winner = a if rng.random() < _win_chance(a.pr, b.pr) else b
        loser = b if winner is a else a
        amount = stake * cube * points
        self._emit(ended, "tavla.game.v1", game_id, game.GameEnded(
            game_id=game_id, table_id=table_id, game_number=1,
            kind=game_pb2.PLAY_KIND_MONEY_GAME, winner_account_id=winner.account_id,
            loser_account_id=loser.account_id, cube_value=cube, points=points,
            reason=reason, stake=money_pb2.Money(minor_units=stake, currency="USD"),  # type: ignore[arg-type]
            players=players, shares=shares, analysed=bool(shares)))
        commission = amount // 20
        self._emit(ended + timedelta(seconds=1), "tavla.wallet.v1", game_id, wallet.Settled(
            game_id=game_id, settlement_id=self._id(), game_number=1,
            kind=wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME, source_event_id=self._id(),
            winner_account_id=winner.account_id, loser_account_id=loser.account_id,
            win_sum=money_pb2.Money(minor_units=amount, currency="USD"),
            commission_total=money_pb2.Money(minor_units=commission, currency="USD"),
            winner_credit=money_pb2.Money(minor_units=amount - commission, currency="USD"),
            loser_debit=money_pb2.Money(minor_units=amount, currency="USD")))
        self._ratings(game_id, winner, loser, ended + timedelta(seconds=2))
        analysed = analysis.MatchAnalysed(game_id=game_id, analysis_id=self._id(), plies=0)
        for player, made in ((a, mine), (b, theirs)):
            counted = [d for d in made if d.counted]
            error = sum(d.error for d in counted) / max(1, len(counted))
            analysed.players.add(
                account_id=player.account_id, error_per_decision=error,
                performance_rating=500 * error, decisions=len(made),
                checker_decisions=sum(d.kind == "checker" for d in counted),
                cube_decisions=sum(d.kind != "checker" for d in counted),
                decision_list=made)
        self._emit(ended + timedelta(seconds=20), "tavla.analysis.v1", game_id, analysed)
        lines = list(talk)
        if not quiet and not talk and rng.random() < self.p.chat_rate:
            lines = [(rng.choice((a, b)), rng.choice(HONEST_TALK))
                     for _ in range(rng.randint(1, 3))]
        for number, (sender, text) in enumerate(lines):
            when = at + (ended - at) * (number + 1) / (len(lines) + 1)
            self._chat(game_id, table_id, sender, b if sender is a else a, text, when)
        return ended

    def _drop_and_return(self, game_id: str, player: Account, at: datetime,
                         ended: datetime) -> None:
        """A drop that came back: ``PlayerDisconnected``, then ``PlayerReconnected`` 20 s to
        4.5 min later (never past the session's last events)."""
        rng = self.rng
        dropped = at + (ended - at) * rng.uniform(0.05, 0.7)
        away = timedelta(seconds=min(rng.uniform(20, 270),
                                     0.5 * (ended - dropped).total_seconds()))
        self._emit(dropped, "tavla.game.v1", game_id, game.PlayerDisconnected(
            game_id=game_id, game_number=1, account_id=player.account_id))
        back = game.PlayerReconnected(game_id=game_id, game_number=1,
                                      account_id=player.account_id)
        back.disconnected_for.FromTimedelta(away)
        self._emit(dropped + away, "tavla.game.v1", game_id, back)
        if player.kind is Kind.HONEST:
            self.world.returns += 1

    def _chat(self, game_id: str, table_id: str, sender: Account, recipient: Account,
              text: str, at: datetime) -> None:
        recent = self.recent_chat.setdefault(sender.account_id + table_id, [])
        reasons = moderation.blocked_reasons(text, recent, at)
        recent.append(moderation.Recent(moderation.normalised(text), at))
        self._emit(at, "tavla.game.v1", game_id, game.ChatMessagePosted(
            game_id=game_id, message_id=self._id(), table_id=table_id,
            account_id=sender.account_id, recipient_account_id=recipient.account_id,
            text=text, blocked_reasons=list(reasons),
            status=game_pb2.CHAT_STATUS_BLOCKED if reasons else game_pb2.CHAT_STATUS_DELIVERED))

    def _ratings(self, game_id: str, winner: Account, loser: Account, at: datetime) -> None:
        w, lo = self.ratings[winner.account_id], self.ratings[loser.account_id]
        change = 16 * (1 - 1 / (1 + 10 ** ((lo - w) / 400)))
        for player, other, before, after in ((winner, loser, w, w + change),
                                             (loser, winner, lo, lo - change)):
            self.ratings[player.account_id] = after
            self._emit(at, "tavla.matchmaking.v1", player.account_id, matchmaking.RatingChanged(
                account_id=player.account_id, previous_rating=before, new_rating=after,
                change=after - before, game_id=game_id, opponent_account_id=other.account_id,
                match_length=1, experience=100))

    # -- time -----------------------------------------------------------------------
    def moment(self, day: int | None = None) -> datetime:
        """An evening moment of ``day`` (a random day of the month when None)."""
        day = self.rng.randrange(1, self.p.days) if day is None else day
        return START + timedelta(days=day, hours=self.rng.uniform(9, 23))


def _win_chance(pr_a: float, pr_b: float) -> float:
    """A's chance of winning one money game against B: 0.5 at equal strength, about 65 %
    for 10 PR points better (a logistic in the PR gap)."""
    return 1 / (1 + math.exp(-(pr_b - pr_a) * 0.06))


def build(params: WorldParams, pool: PositionPool) -> World:
    """The population of ``params`` and its month of facts, in time order."""
    b = _Builder(params, pool)
    honest = _honest(b)
    _abusers(b, honest)
    b.world.facts.sort(key=lambda f: f.at)
    return b.world


def _honest_stop(b: _Builder, player: Account, opponent: Account) -> tuple[Account, int, float]:
    """An honest stop: a dropped connection or a clock run out at a moment unrelated to the
    position: the stopper's share there, drawn around even (a stronger player a little
    ahead)."""
    edge = 0.01 * (opponent.pr - player.pr)
    share = min(0.98, max(0.02, b.rng.gauss(0.5 + edge, 0.22)))
    b.world.stops.append(share)
    reason = (game_pb2.END_REASON_DISCONNECTION
              if b.rng.random() < b.p.drop_rate / (b.p.drop_rate + b.p.timeout_rate)
              else game_pb2.END_REASON_TIMEOUT)
    return player, reason, share


def _returns(b: _Builder, player: Account) -> int:
    """How many of ``player``'s drops in a session came back within the window: for each
    drop that does not (the player's rate of disconnection stops), ``c / (1 - c)`` that
    do, ``c`` their chance of coming back (Poisson)."""
    rate = player.drop_rate or (b.p.drop_rate + b.p.timeout_rate)
    lost = rate / 2 * b.p.drop_rate / (b.p.drop_rate + b.p.timeout_rate)
    mean = lost * player.comes_back / (1 - player.comes_back)
    count, left = 0, b.rng.random()
    while left > math.exp(-mean):
        count += 1
        left *= b.rng.random()
    return count


def _honest_game(b: _Builder, x: Account, y: Account, at: datetime) -> datetime:
    rng = b.rng
    returns = ((x, _returns(b, x)), (y, _returns(b, y)))
    for player, other in ((x, y), (y, x)):
        rate = player.drop_rate or (b.p.drop_rate + b.p.timeout_rate)
        if rng.random() < rate / 2:
            return b.session(x, y, at, stop=_honest_stop(b, player, other), returns=returns)
    if rng.random() < b.p.resign_rate * 0.5:  # a lost game resigned (the loser far behind)
        loser = x if rng.random() > _win_chance(x.pr, y.pr) else y
        return b.session(x, y, at, stop=(loser, game_pb2.END_REASON_RESIGNED,
                                         rng.uniform(0.0, 0.3)), returns=returns)
    return b.session(x, y, at, returns=returns)


def _honest(b: _Builder) -> list[Account]:
    p, rng = b.p, b.rng
    made: list[Account] = []
    # Shared addresses: carrier NAT (one public address), a /24, a /64, CGNAT, a café.
    for size in p.nat_groups:
        address = b._home()
        made += [b.account(Kind.HONEST, address=address) for _ in range(size)]
    for size in p.network_groups:
        network = next(b.networks)
        made += [b.account(Kind.HONEST, address=str(network[rng.randrange(2, 250)]))
                 for _ in range(size)]
    for size in p.v6_groups:
        prefix = (0x2A00 << 112) | (rng.getrandbits(48) << 64)
        made += [b.account(Kind.HONEST, address=str(ipaddress.IPv6Address(
            prefix | rng.getrandbits(64)))) for _ in range(size)]
    made += [b.account(Kind.HONEST, address=f"100.{rng.randrange(64, 128)}."
                       f"{rng.randrange(256)}.{rng.randrange(1, 255)}") for _ in range(p.cgnat)]
    cafe_users, computers = p.cafe
    cafe_address = b._home()
    devices = [b._id() for _ in range(computers)]
    made += [b.account(Kind.HONEST, address=cafe_address, device=devices[0],
                       extra_devices=tuple(devices[1:])) for _ in range(cafe_users)]
    households: list[list[Account]] = []
    for _ in range(p.households):
        address = b._home()
        households.append([b.account(Kind.HONEST, address=address)
                           for _ in range(rng.randint(2, 3))])
        made += households[-1]
    while len(made) < p.honest:
        made.append(b.account(Kind.HONEST))
    for index in rng.sample(range(len(made)), p.flaky):
        made[index] = _replace(b, made[index], drop_rate=p.flaky_drop_rate)
    # Sessions: against random honest opponents over the month.
    for player in made:
        low, high = p.strong_sessions if player.pr < 5 else p.sessions
        for _ in range(rng.randint(low, high)):
            _honest_game(b, player, rng.choice([o for o in rng.sample(made, 3)
                                                if o is not player]), b.moment())
    # Friends (strangers otherwise) and households: dozens of games with each other.
    pairs = [tuple(rng.sample(made, 2)) for _ in range(p.friend_pairs)]
    pairs += [(h[0], h[1]) for h in households]
    for x, y in pairs:
        evenings = rng.sample(range(1, p.days), min(p.days - 1, 8))
        games = rng.randint(*p.friend_games)
        for evening in evenings:
            at = b.moment(evening)
            for _ in range(math.ceil(games / len(evenings))):
                at = _honest_game(b, x, y, at) + timedelta(seconds=30)
    return made


def _replace(b: _Builder, account: Account, **changes: object) -> Account:
    from dataclasses import replace

    changed = replace(account, **changes)  # type: ignore[arg-type]
    b.world.accounts[account.account_id] = changed
    return changed


def _abusers(b: _Builder, honest: list[Account]) -> None:
    p, rng = b.p, b.rng

    def opponent() -> Account:
        return rng.choice(honest)

    for _ in range(p.bots):  # strong, noisy, human think times; several evenings
        bot = b.account(Kind.BOT, pr=0.0, second_best=rng.uniform(*p.bot_second_best))
        for _ in range(rng.randint(*p.bot_sessions)):
            b.session(bot, opponent(), b.moment())
    for _ in range(p.consultants):  # one person, two accounts at two tables; never chats
        helped = b.account(Kind.CONSULTANT)
        helper = b.account(Kind.CONSULTANT, pr=helped.pr,
                           **_one_person(b, helped, rng.random() < 0.5))
        for _ in range(rng.randint(*p.consultant_solo)):
            b.session(helped, opponent(), b.moment(), quiet=True)
        for _ in range(rng.randint(*p.consulted_sessions)):
            at = b.moment()
            b.session(helped, opponent(), at, a_engine=True, quiet=True)
            b.session(helper, opponent(), at + timedelta(seconds=20), a_slow=2.5, quiet=True)
    for _ in range(p.dumpers):  # losing on purpose, mixed with honest games
        # Half are one person paying with one card (so multi-accounting too), half two
        # accounts of strangers or friends, linked by nothing.
        linked = rng.random() < 0.5
        also = frozenset({Detector.MULTI_ACCOUNTING}) if linked else frozenset()
        giver = b.account(Kind.DUMP_GIVER, extra_labels=also)
        receiver = b.account(Kind.DUMP_RECEIVER, card=giver.card if linked else "",
                             extra_labels=also)
        for _ in range(rng.randint(*p.dumper_honest)):
            _honest_game(b, giver, opponent(), b.moment())
            _honest_game(b, receiver, opponent(), b.moment())
        for _ in range(rng.randint(*p.dumped_games)):
            if rng.random() < 0.3:  # resigns a good position
                b.session(giver, receiver, b.moment(), a_throws=True,
                          stop=(giver, game_pb2.END_REASON_RESIGNED, rng.uniform(0.55, 0.8)))
            else:
                b.session(giver, receiver, b.moment(), a_throws=True, winner=receiver)
    for _ in range(p.multi):  # separate devices and addresses, one card
        first = b.account(Kind.MULTI)
        group = [first] + [b.account(Kind.MULTI, pr=first.pr, card=first.card)
                           for _ in range(rng.randint(*p.multi_accounts) - 1)]
        for account in group:
            for _ in range(rng.randint(*p.multi_sessions)):
                _honest_game(b, account, opponent(), b.moment())
    for _ in range(p.traders):  # alternating results, not every time
        x, y = b.account(Kind.TRADER), b.account(Kind.TRADER)
        alternation = rng.uniform(*p.trade_alternation)
        last = x
        days = sorted(rng.sample(range(1, p.days), rng.randint(*p.traded_sessions)))
        for day in days:
            winner = (y if last is x else x) if rng.random() < alternation else last
            loser = y if winner is x else x
            b.session(loser, winner, b.moment(day), winner=winner, a_throws=True)
            last = winner
        for account in (x, y):
            for _ in range(rng.randint(2, 6)):
                _honest_game(b, account, opponent(), b.moment())
    for _ in range(p.disconnecters):  # walks from some losing games
        leaver = b.account(Kind.DISCONNECTER, walk_share=rng.uniform(*p.walk_share))
        for _ in range(rng.randint(*p.disconnecter_sessions)):
            other = opponent()
            behind = rng.random() < 0.5  # at some point clearly losing
            if behind and rng.random() < leaver.walk_share:
                reason = rng.choice((game_pb2.END_REASON_DISCONNECTION,
                                     game_pb2.END_REASON_TIMEOUT))
                b.session(leaver, other, b.moment(),
                          stop=(leaver, reason, rng.uniform(0.05, 0.38)))
            else:
                _honest_game(b, leaver, other, b.moment())
    for kind, count, sessions, lines in ((Kind.HARASSER, p.harassers, p.harasser_sessions,
                                          INSULTS),
                                         (Kind.SPAMMER, p.spammers, p.spammer_sessions, SPAM)):
        for _ in range(count):
            abuser = b.account(kind)
            evening = rng.randrange(1, p.days)
            at = b.moment(evening)
            for _ in range(rng.randint(*sessions)):
                other = opponent()
                said = tuple((abuser, rng.choice(lines)) for _ in range(rng.randint(1, 4)))
                at = b.session(abuser, other, at, talk=said) + timedelta(minutes=2)


def _one_person(b: _Builder, first: Account, same_device: bool) -> dict[str, str]:
    """A second account of ``first``'s holder: the same computer, or their own card on
    another computer at another address (a phone on mobile data)."""
    if same_device:
        return {"device": first.device, "address": first.address}
    return {"card": first.card}
