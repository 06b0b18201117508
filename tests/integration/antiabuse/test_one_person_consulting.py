"""Consulting's one-person test through the real anti-abuse service, PostgreSQL and broker:
the accounts' logins, the game's windows and the analysis' ``MatchAnalysed`` as those
services publish them, the alerts read on `tavla.compliance.alerts.v1`.

Two accounts on one device (one person by a strong link) at two tables at once, never a
word of chat: the helped account alone misses the best play on 16 of 40 decisions, at two
tables on 1 of 40, and the other account, which plays only then, takes 15 s a decision
against the person's usual 5 s: HIGH consulting for the pair, from 80 decisions (the z-test
needs 60 of baseline alone). A household pair (one address, own devices: no strong link)
playing the same way raises nothing.

Between the lines, the population's paces (``account_paces``, kept from every analysis) are
the second sign for an other account with no games of its own: among 100 players at 5 s a
decision, one at 20 s while its person's other account was consulted (only 1.67 times that
person's 12 s) is among the slowest 5 %: MEDIUM. The same pair whose other account also
played a game alone at its usual 18 s raises nothing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.kit.events.envelope import Envelope
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.integration.antiabuse.test_play_detectors import (
    ANALYSIS,
    COLLUSION,
    GAME,
    alerts_now,
    alerts_of,
    analysed,
    new_id,
    player,
    window,
)
from tests.support import antiabuse as support
from tests.support.kafka import publish
from tests.support.services import RunningService

ALERTS = "tavla.compliance.alerts.v1"


def plays(missed: int, best: int, seconds: float) -> list[tuple[str, bool, float, float]]:
    return [("checker", True, 0.02, seconds)] * missed + [("checker", True, 0.0, seconds)] * best


def helped_while_seated(
    alone: str, other: str
) -> tuple[list[Envelope], dict[str, list[Envelope]]]:
    """A day ago: ``alone`` plays a game by itself, then one while ``other`` is seated at
    another table (the other account's only game): the games' facts and each account's
    analyses."""
    start = datetime.now(UTC) - timedelta(days=1)
    plan = [
        (alone, plays(16, 24, 5.0), 0, 60),  # alone
        (alone, plays(1, 39, 5.0), 120, 60),  # while the other account is seated
        (other, plays(10, 30, 15.0), 125, 50),  # its only game, at the other table
    ]
    game_facts: list[Envelope] = []
    analyses: dict[str, list[Envelope]] = {}
    for account, decisions, offset, minutes in plan:
        game_id = new_id()
        game_facts += window(game_id, [account, new_id()], start + timedelta(minutes=offset),
                             minutes)  # fmt: skip
        analyses.setdefault(account, []).append(analysed(game_id, [player(account, decisions)]))
    return game_facts, analyses


async def test_one_person_at_two_tables_playing_the_best_plays(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    helped, helper = new_id(), new_id()
    household_helped, household_other = new_id(), new_id()
    home = f"{support.fresh_network()}.7"
    await publish(
        bootstrap,
        [
            # One person's two accounts, made at one computer together.
            *support.one_persons_accounts(helped, helper),
            support.logged_in(household_helped, f"dev-{uuid.uuid4().hex[:8]}", home),
            support.logged_in(household_other, f"dev-{uuid.uuid4().hex[:8]}", home),
        ],
    )
    game_facts: list[Envelope] = []
    analyses: dict[str, list[Envelope]] = {}
    for alone, other in ((helped, helper), (household_helped, household_other)):
        facts, analysed_games = helped_while_seated(alone, other)
        game_facts += facts
        analyses.update(analysed_games)
    await publish(bootstrap, game_facts)
    await support.all_consumed(bootstrap, [GAME, "tavla.accounts.v1"])
    await publish(bootstrap, analyses[helper] + analyses[household_other])
    await support.all_consumed(bootstrap, [ANALYSIS])
    await publish(bootstrap, analyses[helped] + analyses[household_helped])

    (alert,) = await support.read_topic(
        bootstrap, ALERTS, alerts_of(COLLUSION, {helped}), lambda got: len(got) >= 1
    )
    assert isinstance(alert, antiabuse_events.ComplianceAlert)
    assert sorted(alert.subject_account_ids) == sorted([helped, helper])
    # 1 miss of 40 overlapping, 17 of all 80: P(X <= 1) = (C(63,40) + 17 C(63,39)) /
    # C(80,40) = 2.56e-5 <= 0.001 (sigma 4.05); the helper at 15 s against the person's
    # 5 s alone (ratio 3.0, at least 1.5): HIGH.
    assert alert.severity == antiabuse_events.SEVERITY_HIGH
    assert alert.score == pytest.approx(4.05, abs=0.01)
    evidence = {e.kind: e for e in alert.evidence}
    assert "better_while_linked_account_seated" not in evidence  # 40 alone: no z-test
    best = evidence["best_plays_while_own_account_seated"]
    assert (best.details["misses_overlapping"], best.details["misses_baseline"]) == ("1", "16")
    assert evidence["linked_account_idle"].details["think_time_ratio"] == "3.00"

    # The household (linked by its address only) played the same way: nothing.
    found = await alerts_now(
        antiabuse, bootstrap, COLLUSION, {helped, household_helped, household_other}
    )
    assert [sorted(a.subject_account_ids) for a in found] == [sorted([helped, helper])]


async def test_an_other_account_among_the_populations_slowest(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    # The population: 100 players at 5 s a decision, two to a game.
    crowd = [new_id() for _ in range(100)]
    await publish(
        bootstrap,
        [
            analysed(new_id(), [player(a, plays(8, 12, 5.0)), player(b, plays(8, 12, 5.0))])
            for a, b in zip(crowd[::2], crowd[1::2], strict=True)
        ],
    )
    await support.all_consumed(bootstrap, [ANALYSIS])
    start = datetime.now(UTC) - timedelta(days=1)
    pairs = {"slow": (new_id(), new_id()), "own pace": (new_id(), new_id())}
    for helped, helper in pairs.values():  # one person's two accounts, made together
        await publish(bootstrap, support.one_persons_accounts(helped, helper))
    game_facts: list[Envelope] = []
    first: list[Envelope] = []
    last: list[Envelope] = []
    for name, (helped, helper) in pairs.items():
        plan = [
            (helped, plays(8, 22, 12.0), 0, 60, last),  # alone: 8 misses of 30, 12 s
            (helped, plays(3, 57, 12.0), 120, 60, last),  # at two tables: 3 of 60
            (helper, plays(10, 30, 20.0), 125, 50, first),  # the other table, at 20 s
        ]
        if name == "own pace":  # a game of its own, alone, at its usual 18 s
            plan.append((helper, plays(10, 30, 18.0), 300, 50, first))
        for account, decisions, offset, minutes, batch in plan:
            game_id = new_id()
            game_facts += window(
                game_id, [account, new_id()], start + timedelta(minutes=offset), minutes
            )
            batch.append(analysed(game_id, [player(account, decisions)]))
    await publish(bootstrap, game_facts)
    await support.all_consumed(bootstrap, [GAME, "tavla.accounts.v1"])
    await publish(bootstrap, first)
    await support.all_consumed(bootstrap, [ANALYSIS])
    await publish(bootstrap, last)

    slow_helped, slow_helper = pairs["slow"]
    (alert,) = await support.read_topic(
        bootstrap, ALERTS, alerts_of(COLLUSION, {slow_helped}), lambda got: len(got) >= 1
    )
    assert isinstance(alert, antiabuse_events.ComplianceAlert)
    assert sorted(alert.subject_account_ids) == sorted([slow_helped, slow_helper])
    # 3 misses of 60 at two tables, 11 of all 90: P(X <= 3) = sum over i <= 3 of C(11,i)
    # C(79,60-i) / C(90,60) = 0.005467, between 0.001 and 0.05 (sigma 2.54); at the
    # fewest misses a person makes (15 %), 3 of 60 is 0.0148 (> 0.001); the other account
    # 20 / 12 = 1.67 times the person's pace (under 2): only the population's paces say it
    # idled: its pace as slow as at most 5 % of the accounts' (itself among them).
    assert alert.severity == antiabuse_events.SEVERITY_MEDIUM
    assert alert.score == pytest.approx(2.54, abs=0.01)
    evidence = {e.kind: e for e in alert.evidence}
    best = evidence["best_plays_while_own_account_seated"]
    assert (best.details["p_value"], best.details["alert_line"]) == ("0.00547", "0.05")
    idle = evidence["linked_account_idle"].details
    assert idle["think_time_ratio"] == "1.67"
    assert 0 < float(idle["population_at_least_as_slow"]) <= 0.05

    # The other pair's other account keeps a pace of its own (18 s): 20 s is 1.11 times
    # it, and the population's paces are not asked: nothing.
    found = await alerts_now(antiabuse, bootstrap, COLLUSION, set(pairs["own pace"]))
    assert found == []


async def test_a_consultant_behind_a_nat_of_linked_strangers_is_judged(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    """The first test's person, now behind a campus /24 that 25 strangers log in from too,
    every one of them with an id that sorts before the person's other account: all are
    linked to the helped account (the network, a weak link), none ever played. The person
    is judged and alerted as before: the candidates are the accounts at another table at
    the time, whatever their place among the linked accounts (judging the first 20 linked
    accounts by id passed the other account over)."""
    bootstrap = kafka_broker.bootstrap
    helped, helper = new_id(), f"z{new_id()}"
    strangers = [f"0{new_id()}" for _ in range(25)]
    campus, device = support.fresh_network(), f"dev-{uuid.uuid4().hex[:8]}"
    await publish(
        bootstrap,
        [
            support.registered(helped, f"{helped}@example.com", "hal"),
            support.registered(helper, f"{helper}@example.com", "hel"),
            support.logged_in(helped, device, f"{campus}.10"),
            support.logged_in(helper, device, f"{support.fresh_network()}.11"),
            *(support.logged_in(s, f"dev-{uuid.uuid4().hex[:8]}", f"{campus}.{20 + i}")
              for i, s in enumerate(strangers)),
        ],
    )  # fmt: skip
    game_facts, analyses = helped_while_seated(helped, helper)
    await publish(bootstrap, game_facts)
    await support.all_consumed(bootstrap, [GAME, "tavla.accounts.v1"])
    await publish(bootstrap, analyses[helper])
    await support.all_consumed(bootstrap, [ANALYSIS])
    await publish(bootstrap, analyses[helped])

    found = await alerts_now(antiabuse, bootstrap, COLLUSION, {helped, *strangers})
    assert [sorted(a.subject_account_ids) for a in found] == [sorted([helped, helper])]
    assert found[0].severity == antiabuse_events.SEVERITY_HIGH
