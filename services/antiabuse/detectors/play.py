"""Assistance and consulting during play, run on the analysis service's ``MatchAnalysed``.

Each player's decisions of the analysed session are kept
(:mod:`services.antiabuse.play_store`, once per session and player), then:

- *assistance* (:mod:`services.antiabuse.domain.assistance`): the player's latest
  decisions judged by the sequential engine-closeness and timing test and the shape of
  their choices, without the decisions of their games that overlapped a game of the
  same person's other account (one person by a strong link): those are consulting's,
  found by the consulting pass below, which runs first;
- *consulting* (:mod:`services.antiabuse.domain.consulting_play`): for each account
  at another table while one of the player's games ran (the candidates: an index read of
  the game windows, running games included) that the multi-accounting graph links to the
  player (asked of the candidates alone, :meth:`MultiAccounting.joined`), both directions
  (the player helped by it, and it helped by the player: this session may be the overlap
  that completes the other's evidence); the linked accounts' windows are read together, and a
  pair whose games overlap is locked, then its counted decisions per game read: only a
  direction whose counts can reach the tests' minimums
  (:func:`~services.antiabuse.domain.consulting_play.within_reach`) has its decisions
  read and judged (each account's once for both directions). Whether the two are one
  person by a strong link (the multi-accounting graph's ``one_person``: a device, a
  mailbox, a payment instrument) comes with the links; it lets the one-person
  test of best plays run, and the population's paces (:meth:`PlayFacts.paces`) are then
  read once for it: the other account with no games of its own is judged idle among the
  population's slowest.

The game windows the consulting test needs come from ``GameStarted`` and
``GameEnded`` (:meth:`PlayDetectors.game_started`, :meth:`PlayDetectors.game_ended`).
Every finding goes the common alert path.
"""

from __future__ import annotations

from datetime import datetime

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain import assistance, consulting_play
from services.antiabuse.domain.consulting_play import GameKey, PacePopulation, Played, Window
from services.antiabuse.play_store import PlayFacts
from tavla.analysis.v1 import analysis_pb2
from tavla.analysis.v1 import events_pb2 as analysis

# Linked accounts judged per analysis, those at the most of its games at once first (a
# safety bound: the tables running at once bound them already; a ring's alert is
# multi-accounting's).
MAX_JUDGED = 20


def moves_of(game_id: str, player: analysis_pb2.PlayerAnalysis) -> list[assistance.Move]:
    return [
        assistance.Move(
            game_id=game_id,
            game_number=d.game_number,
            kind=d.kind,
            counted=d.counted,
            error=d.error,
            seconds=d.seconds if d.HasField("seconds") else None,
            rank=d.rank if d.HasField("rank") else None,
            second_loss=d.second_loss if d.HasField("second_loss") else None,
            third_loss=d.third_loss if d.HasField("third_loss") else None,
        )
        for d in player.decision_list
    ]


def _of(counted: dict[GameKey, int], windows: list[Window]) -> dict[GameKey, int]:
    """The counts of ``windows``' sessions (those :meth:`PlayFacts.played` would read)."""
    sessions = {w.game_id for w in windows}
    return {key: n for key, n in counted.items() if key[0] in sessions}


class PlayDetectors:
    def __init__(
        self,
        linking: MultiAccounting,
        policy: assistance.AssistancePolicy = assistance.DEFAULT_POLICY,
        overlap: consulting_play.OverlapPolicy = consulting_play.DEFAULT_POLICY,
    ) -> None:
        self._linking = linking
        self._policy = policy
        self._overlap = overlap

    async def game_started(
        self, work: Work, game_id: str, game_number: int, players: list[str], at: datetime
    ) -> None:
        if game_id:
            await PlayFacts(work.session).started(game_id, game_number or 1, players, at)

    async def game_ended(
        self, work: Work, game_id: str, game_number: int, players: list[str], at: datetime
    ) -> None:
        if game_id:
            await PlayFacts(work.session).ended(game_id, game_number or 1, players, at)

    async def analysed(self, work: Work, fact: analysis.MatchAnalysed, at: datetime) -> None:
        facts = PlayFacts(work.session)
        for player in fact.players:
            if not fact.game_id or not player.account_id:
                continue
            if await facts.analysed(
                fact.game_id, player.account_id, moves_of(fact.game_id, player), at
            ):
                consulted = await self._consulting(work, facts, player.account_id)
                await self._assistance(work, facts, player.account_id, consulted)

    async def _assistance(
        self, work: Work, facts: PlayFacts, account_id: str, consulted: set[GameKey]
    ) -> None:
        moves = await facts.moves(account_id)
        finding = assistance.assess(
            account_id, moves, await facts.population(), self._policy, consulted
        )
        if finding is not None:
            await raise_alert(work, finding)

    async def _consulting(self, work: Work, facts: PlayFacts, account_id: str) -> set[GameKey]:
        """Judges each linked pair whose games overlap; returns the account's games that
        overlapped a game of its own other account (one person by a strong link), that
        one's games still running included: the helped account's analysis often comes
        while the other account's game at the other table is still on.

        The candidates first: the accounts whose games ran while one of this account's did
        (an index read of the windows, running games included: bounded by the tables at
        once, not by the accounts behind an address); then which of them the links join
        to this account, asked of them alone (:meth:`MultiAccounting.joined`). Strangers
        behind one carrier address are linked and seldom at two tables at once, so most
        analyses read no link at all, and a linked account is never passed over for its
        place in an order."""
        consulted: set[GameKey] = set()
        own = await facts.windows(account_id)
        if not own:
            return consulted
        now = work.clock.now()
        overlaps = await facts.overlapping_accounts(account_id, now)
        if not overlaps:
            return consulted
        linked, person = await self._linking.joined(work.facts, account_id, overlaps)
        # A safety bound on the pairs judged per analysis, the most overlapping first: a
        # pair at two tables at once again and again comes before any stranger's chance.
        others = sorted(linked, key=lambda a: (-overlaps[a], a))[:MAX_JUDGED]
        # Their windows in two reads (finished and running games); each overlapping pair's
        # windows are read again once it is locked.
        windows, running = await facts.windows_of(others), await facts.running_of(others, now)
        pairs: list[str] = []  # overlapping in finished games: judged
        for other in others:
            theirs = windows[other]
            if not consulting_play.overlapping(own, theirs + running[other]):
                continue
            if other in person:
                consulted |= consulting_play.overlapping(own, theirs + running[other])
            if consulting_play.overlapping(own, theirs):
                pairs.append(other)  # consulting judges finished games only
        if not pairs:
            return consulted
        # Every pair's accounts are locked (in one statement) before their decisions are
        # read and their windows read again: the other's analysis, on another partition,
        # either committed before or waits for this one. Then each account's counted
        # decisions per game in one read for every pair, and its decisions at most once.
        await work.locks.take((account_id, *pairs))
        own, theirs_of = await facts.windows(account_id), await facts.windows_of(pairs)
        paces: PacePopulation | None = None  # read once, when one person's pair overlaps
        if person & set(pairs):
            paces = await facts.paces(self._overlap.pace_min)
            for other in person & set(pairs):
                consulted |= consulting_play.overlapping(own, theirs_of[other])
        ids = [w.game_id for w in own] + [w.game_id for p in pairs for w in theirs_of[p]]
        counted = await facts.counted([account_id, *pairs], ids)
        played: dict[str, list[Played]] = {}
        for other in pairs:
            judged = paces if other in person else None
            await self._judge(work, facts, (account_id, own), (other, theirs_of[other]),
                              judged, counted, played)  # fmt: skip
        return consulted

    async def _judge(self, work: Work, facts: PlayFacts, first: tuple[str, list[Window]],
                     second: tuple[str, list[Window]], person: PacePopulation | None,
                     counted: dict[str, dict[GameKey, int]],
                     played: dict[str, list[Played]]) -> None:
        """Both directions of a locked pair. A direction whose counted decisions per game
        (``counted``, read for every pair at once) cannot reach the tests' minimums
        (:func:`consulting_play.within_reach`, exact) is not asked, and each account's
        decisions are read at most once for every pair and direction (kept in ``played``:
        an account's windows, and so the games read, are the same for each pair)."""
        one = person is not None
        directions = [
            (helped, helper)
            for helped, helper in ((first, second), (second, first))
            if consulting_play.within_reach(
                helped[1], _of(counted[helped[0]], helped[1]), helper[1], self._overlap, one
            )
        ]
        if not directions:
            return
        for account, seen in (first, second):
            if account not in played:
                played[account] = await facts.played(account, [w.game_id for w in seen])
        for (helped, helped_windows), (helper, helper_windows) in directions:
            finding = consulting_play.assess(
                helped,
                helper,
                helped_windows,
                played[helped],
                helper_windows,
                played[helper],
                self._overlap,
                one_person=one,
                paces=person,
            )
            if finding is not None:
                await raise_alert(work, finding)
