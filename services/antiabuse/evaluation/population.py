"""The labelled population and its schedule of games, from a seed (pure).

Every simulated account has a role, and its labels are the detectors that should
flag it (:data:`LABELS`). Who plays whom, and how, is fixed here, before anything
runs, so one seed is one population. Each abuser plays what its real-world
counterpart would over a month or so, enough for the detector's minimum evidence
(the detectors' sections of the service's README say what they need):

- honest (no label): the others' opponents, and at least 2 games each (never against
  the same honest player more than twice),
  the net plus the noise of its tier (``skill.py``), people's think times, friendly chat;
- bot (assistance): 12 games, :data:`BOT_TABLES` at a time, against honest players
  (bots multi-table: an evening's session), the engine's plays (tau 0) and cube
  actions (playing on when too good, ``players.doubles_on``), think times
  uniform, forced play or not, reacting at once; assistance needs 60 counted
  decisions, and an engine-perfect player is convicted on play alone (without timing)
  from 81: a money game gave the bot about 10 to 13 (many end when its double is
  dropped), 10 games 101 to 133 in three runs, so 12;
- dumper, a giver and a receiver (chip_dumping): :data:`DUMPED_GAMES` games, the giver
  playing its worst plays and resigning a gammon early, whatever the position (a flow
  alone is evidence only when fair play would produce it at most 1 time in 1000: 10
  straight losses; the giver's play in so few moves is seldom enough to corroborate);
- ring, 3 accounts (multi_accounting): one person, one device id, one address; each
  account plays an honest opponent (a few plays, then it resigns: its evidence is
  who it is, not how it plays);
- tanker, a pair (rating_manipulation): :data:`TRADED_GAMES` games one after another
  whose results alternate (win trading needs 8 sessions of a pair: 8 alternating is
  p = 1/128), the loser resigning after its first play (only the result counts);
- disconnecter (deliberate_disconnect): walks away from losing games, for good (the
  detector needs 5 losing abandonments of 5, p = 0.35^5; ``players.py`` says when it
  walks). It plays :data:`DISCONNECTER_TABLES` tables at once against different
  honest players, the next as soon as one ends, with :data:`DISCONNECTER_BATCHES` x
  :data:`DISCONNECTER_MORE` more that are played only while it has walked out of fewer than
  :data:`WALKS_WANTED` games (its month, until the evidence exists: a game it is
  winning it plays to the end; about half its games end in a walk-out, so 18 games
  leave fewer than 5 about 1.5 % of the time at a half, 9 % at 0.4, and the fourth
  batch (as many honest opponents as have not met it twice: 21-22 games in all)
  brings that to 0.2-0.4 % and 3-4 %);
- consultant, 2 accounts (consulting, multi_accounting): one person (one device and
  address) at two tables at once; each account plays at its tier while the other is
  awaited at its own table, and the engine's plays while the other is idle (the
  person consults the engine, or a friend, with the time it has); chat about "the
  other table";
- harasser, spammer (chat_abuse): honest play; insults (at the opening and after each
  play, so that two games cut short still leave the 3 it needs), or links and
  solicitation, then it resigns once it has said them (after 4 and 3 plays: chat is
  its evidence).

Tables of one ``group`` are one account's (the bot's, the disconnecter's), played
:attr:`Population.at_once` of them at a time, each next one as soon as one ends; an
``optional`` table is played only while its host still needs it (the disconnecter's).
Each account calls from a Malta address of its own /64 (``malta_address``) and its
own device, except where one person holds several accounts (ring, consultant).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum

from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation.skill import TAUS


class Role(StrEnum):
    HONEST = "honest"
    BOT = "bot"
    DUMP_GIVER = "dump_giver"
    DUMP_RECEIVER = "dump_receiver"
    RING = "ring"
    TANKER = "tanker"
    DISCONNECTER = "disconnecter"
    CONSULTANT = "consultant"
    HARASSER = "harasser"
    SPAMMER = "spammer"


ROLE_CODES: dict[Role, str] = {
    Role.HONEST: "hn", Role.BOT: "bt", Role.DUMP_GIVER: "dg", Role.DUMP_RECEIVER: "dr",
    Role.RING: "rg", Role.TANKER: "tk", Role.DISCONNECTER: "dc", Role.CONSULTANT: "cn",
    Role.HARASSER: "hr", Role.SPAMMER: "sp",
}  # fmt: skip

LABELS: dict[Role, frozenset[Detector]] = {
    Role.HONEST: frozenset(),
    Role.BOT: frozenset({Detector.ASSISTANCE}),
    Role.DUMP_GIVER: frozenset({Detector.CHIP_DUMPING}),
    Role.DUMP_RECEIVER: frozenset({Detector.CHIP_DUMPING}),
    Role.RING: frozenset({Detector.MULTI_ACCOUNTING}),
    Role.TANKER: frozenset({Detector.RATING_MANIPULATION}),
    Role.DISCONNECTER: frozenset({Detector.DELIBERATE_DISCONNECT}),
    Role.CONSULTANT: frozenset({Detector.CONSULTING, Detector.MULTI_ACCOUNTING}),
    Role.HARASSER: frozenset({Detector.CHAT_ABUSE}),
    Role.SPAMMER: frozenset({Detector.CHAT_ABUSE}),
}


class Plan(StrEnum):
    """How a game's first seat (the ``host``) plays it; the guest plays as its role says."""

    PLAY = "play"  # both play their own way to the end
    HOST_DUMPS = "host_dumps"  # the host loses on purpose (worst plays, early resignation)


@dataclass(frozen=True)
class Persona:
    name: str
    role: Role
    device: str
    address: int  # malta_address(n): its /64
    tau: float  # skill.choose temperature (0: the engine)
    person: str  # who holds the account (several accounts: one person)

    @property
    def labels(self) -> frozenset[Detector]:
        return LABELS[self.role]

    @property
    def screen_name(self) -> str:
        """The name the account registers with: a screen name has at most 20 characters,
        so the role is a two-consonant code ("dr7-1e240" for "dump_receiver7-1e240"); the
        role's accounts still share their letters, as with the long names. Consonants,
        because moderation reads digits as letters: "ho849" reads as an insult."""
        return ROLE_CODES[self.role] + self.name.removeprefix(self.role.value)


@dataclass(frozen=True)
class Table:
    host: str
    guest: str
    plan: Plan = Plan.PLAY
    concurrent_with: str = ""  # consultants: the other account (its table is played at once)
    group: str = ""  # one account's multi-tabling: several of its tables at a time
    optional: bool = False  # played only while its host still needs it (a disconnecter)


@dataclass
class Population:
    seed: int
    personas: dict[str, Persona] = field(default_factory=dict)
    rounds: list[list[Table]] = field(default_factory=list)
    at_once: dict[str, int] = field(default_factory=dict)  # group -> its tables at a time

    def of(self, role: Role) -> list[Persona]:
        return [p for p in self.personas.values() if p.role is role]


BOT_TABLES = 5  # at a time
BOT_GAMES = (5, 5, 2)  # per round: 12
TRADED_GAMES = 8
DUMPED_GAMES = 10
DISCONNECTER_TABLES = 6
DISCONNECTER_MORE = 4
DISCONNECTER_BATCHES = 4  # further batches at most (rounds 1-4)
WALKS_WANTED = 5
ROUNDS = 8


def _counts(players: int) -> dict[Role, int]:
    """Accounts per abusive role (13 for every 24 players); the rest honest (at least 10)."""
    unit = max(1, players // 24)
    counts = {
        Role.RING: 3 * unit, Role.DUMP_GIVER: unit, Role.DUMP_RECEIVER: unit,
        Role.TANKER: 2 * unit, Role.BOT: unit, Role.DISCONNECTER: unit,
        Role.CONSULTANT: 2 * unit, Role.HARASSER: unit, Role.SPAMMER: unit,
    }  # fmt: skip
    honest = players - sum(counts.values())
    if players < 24:
        raise ValueError(f"--players {players} is too few: at least 24 (11 of them honest)")
    counts[Role.HONEST] = honest
    return counts


def build(seed: int, players: int) -> Population:
    """The population of ``players`` accounts for ``seed`` and its rounds of games."""
    rng = random.Random(seed)
    population = Population(seed)
    tag = f"{seed:x}"
    addresses = iter(rng.sample(range(1, 0xFFFF), players))
    for role, count in _counts(players).items():
        group = 3 if role is Role.RING else 2 if role is Role.CONSULTANT else 1
        for number in range(count):
            person = f"{role.value}{number // group}-{tag}"
            first = number % group == 0
            address = next(addresses) if first else population_last_address(population)
            tier = rng.choice(list(TAUS))
            tau = 0.0 if role is Role.BOT else TAUS[tier]
            name = f"{role.value}{number}-{tag}"
            device = f"dev-{person}" if group > 1 else f"dev-{name}"
            population.personas[name] = Persona(
                name, role, device, address, tau, person
            )
    population.rounds = _schedule(population, rng)
    return population


def population_last_address(population: Population) -> int:
    return list(population.personas.values())[-1].address


def _schedule(population: Population, rng: random.Random) -> list[list[Table]]:
    honest = [p.name for p in population.of(Role.HONEST)]
    rounds: list[list[Table]] = [[] for _ in range(ROUNDS)]
    busy: list[set[str]] = [set() for _ in range(ROUNDS)]
    met: dict[frozenset[str], int] = {}

    games = {name: 0 for name in population.personas}

    def seat(round_no: int, table: Table) -> None:
        games[table.host] += 1
        games[table.guest] += 1
        rounds[round_no].append(table)
        busy[round_no].update((table.host, table.guest))
        pair = frozenset((table.host, table.guest))
        met[pair] = met.get(pair, 0) + 1

    def opponent(round_no: int, player: str) -> str | None:
        """A free honest player, among those who played least (the games spread evenly)."""
        free = [h for h in honest if h not in busy[round_no] and h != player
                and met.get(frozenset((h, player)), 0) < 2]
        if not free:
            return None
        fewest = min(games[h] for h in free)
        return rng.choice([h for h in free if games[h] == fewest])

    def against_honest(player: str, games: int) -> None:
        # Rounds 1-4: round 0 holds the bot's and the disconnecter's tables.
        for round_no in rng.sample(range(1, 5), min(games, 4)):
            if player in busy[round_no]:
                continue
            other = opponent(round_no, player)
            if other:
                seat(round_no, Table(player, other))

    def at_once(player: str, round_no: int, tables: int, optional: bool) -> None:
        """``tables`` games of ``player`` at once in ``round_no``, each against another
        honest player (one who has not met ``player`` twice)."""
        for _ in range(tables):
            other = opponent(round_no, player)
            if other is None:
                if optional:
                    return
                raise ValueError(f"no honest opponent left for {player} in round {round_no}")
            seat(round_no, Table(player, other, group=player, optional=optional))

    for giver, receiver in zip(population.of(Role.DUMP_GIVER), population.of(Role.DUMP_RECEIVER),
                               strict=True):
        for game in range(DUMPED_GAMES):  # spread over the rounds, in order
            seat(game * ROUNDS // DUMPED_GAMES, Table(giver.name, receiver.name, Plan.HOST_DUMPS))
    # Round 0 first (the longest evidence: it starts at once): 5 + 6 honest opponents.
    for persona in population.of(Role.BOT):
        population.at_once[persona.name] = BOT_TABLES
        for round_no, tables in enumerate(BOT_GAMES):
            at_once(persona.name, round_no, tables, optional=False)
    for persona in population.of(Role.DISCONNECTER):
        population.at_once[persona.name] = DISCONNECTER_TABLES
        at_once(persona.name, 0, DISCONNECTER_TABLES, optional=False)
        for round_no in range(1, 1 + DISCONNECTER_BATCHES):
            at_once(persona.name, round_no, DISCONNECTER_MORE, optional=True)
    tankers = population.of(Role.TANKER)
    for a, b in zip(tankers[::2], tankers[1::2], strict=True):
        for round_no in range(TRADED_GAMES):  # win trading: the loser alternates
            host, guest = (a, b) if round_no % 2 == 0 else (b, a)
            seat(round_no, Table(host.name, guest.name, Plan.HOST_DUMPS))
    consultants = population.of(Role.CONSULTANT)
    for a, b in zip(consultants[::2], consultants[1::2], strict=True):
        # Both accounts at once, two tables; round 0 is the bot's and the disconnecter's.
        for round_no in rng.sample(range(1, 5), 2):
            first, second = opponent(round_no, a.name), None
            if first:
                busy[round_no].add(first)
                second = opponent(round_no, b.name)
                busy[round_no].discard(first)
            if first and second:
                seat(round_no, Table(a.name, first, concurrent_with=b.name))
                seat(round_no, Table(b.name, second, concurrent_with=a.name))
    for role, count in ((Role.RING, 1),
                        (Role.HARASSER, 2), (Role.SPAMMER, 2)):
        for persona in population.of(role):
            against_honest(persona.name, count)
    for player in honest:
        if games[player] < 2:
            against_honest(player, 1)
    return [r for r in rounds if r]
