"""A small held-out world applied to the anti-abuse consumer's handlers on the real
PostgreSQL (``evaluation/feed.py``), as ``tavla abuse eval --population held-out`` does
with the full one: every multi-accounter paying with one card is flagged, none of the
honest accounts behind one carrier address, one /24, one /64 or in a household is (an
address or a network is context, never an alert), no honest account is flagged for
consulting by its table talk ("next game?", "the other table was faster"), and the
default policy freezes no honest account."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation import decisions, feed, heldout
from services.antiabuse.evaluation.runner import flagged_accounts
from tests.support.services import new_database

POOL = decisions.PositionPool(
    ((0.0, 0.02, 0.1), (0.0, 0.0, 0.05), (0.0, 0.004, 0.03, 0.2), (0.0, 0.06)), 0.15
)
SMALL = dataclasses.replace(
    heldout.HELD_OUT, seed=4242, honest=40, nat_groups=(5,), network_groups=(3,),
    v6_groups=(3,), cgnat=3, sessions=(1, 2), strong_sessions=(3, 5), cafe=(0, 1),
    households=2, friend_pairs=2, friend_games=(8, 10),
    flaky=2, chat_rate=0.6, bots=1, consultants=1, dumpers=1, multi=3, traders=1,
    disconnecters=1, harassers=1, spammers=1,
)


@pytest.mark.timeout(900)  # a few thousand facts through the detectors on a loaded machine
async def test_a_small_held_out_world_through_the_consumer(postgres_server: Any) -> None:
    world = heldout.build(SMALL, POOL)
    url = postgres_server.url(new_database(postgres_server, "antiabuse_heldout"))
    outcome = await feed.run(world, url, lambda line: None)
    flagged = flagged_accounts(outcome.alerts)
    multi = {a.account_id for a in world.of(heldout.Kind.MULTI)}
    assert multi and multi <= flagged[Detector.MULTI_ACCOUNTING]
    honest = {a.account_id for a in world.of(heldout.Kind.HONEST)}
    assert not honest & flagged[Detector.MULTI_ACCOUNTING]  # no café here: nothing shared
    assert not honest & flagged[Detector.CONSULTING]
    assert not honest & outcome.frozen
    assert not honest & outcome.restricted
    # The multi-accounters' cards made one person of each group: their pairs restricted.
    assert multi <= outcome.restricted
