"""The evaluation's pure parts: scores by hand, the population's labels and schedule."""

from __future__ import annotations

import itertools
import random

import pytest

from services.accounts.screen_names import canonical, check_screen_name
from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation.players import doubles_on
from services.antiabuse.evaluation.population import LABELS, Plan, Role, build
from services.antiabuse.evaluation.scoring import DetectorScore, pool, result_line, score
from services.antiabuse.evaluation.skill import Option, choose, worst

D = Detector


def test_scores_by_hand() -> None:
    # Ten accounts: a, b, c dumped chips; d..j did not. Flagged: a, b and the innocent d.
    labels = {name: {D.CHIP_DUMPING} if name in "abc" else set() for name in "abcdefghij"}
    flagged = {D.CHIP_DUMPING: {"a", "b", "d", "outsider"}}
    dumping = score(labels, flagged)[D.CHIP_DUMPING]
    assert (dumping.positives, dumping.negatives) == (3, 7)
    assert dumping.precision == pytest.approx(2 / 3)  # a, b of a, b, d ("outsider" is no account)
    assert dumping.recall == pytest.approx(2 / 3)  # a, b of a, b, c
    assert dumping.false_positive_rate == pytest.approx(1 / 7)  # d of d..j
    silent = score(labels, flagged)[D.ASSISTANCE]  # nothing to find, nothing raised
    assert (silent.precision, silent.recall, silent.false_positive_rate) == (1.0, 1.0, 0.0)


def test_the_result_line_names_all_seven_detectors() -> None:
    line = result_line(score({"a": {D.CHAT_ABUSE}}, {D.CHAT_ABUSE: {"a"}}))
    assert set(line["detectors"]) == {  # type: ignore[call-overload]
        "multi_accounting", "assistance", "chip_dumping", "rating_manipulation", "consulting",
        "deliberate_disconnect", "chat_abuse",
    }
    assert line["detectors"]["chat_abuse"] == {  # type: ignore[index]
        "precision": 1.0, "recall": 1.0, "false_positive_rate": 0.0,
        # 1 of 1: low = 1 / (1 + 3.8415) = 0.2065; no negatives: the rate is unbounded
        "recall_95": [0.2065, 1.0], "false_positive_rate_95": [0.0, 1.0],
        "positives": 1, "negatives": 0, "true_positives": 1, "false_positives": 0,
    }


def test_the_goal_is_judged_on_the_intervals_far_end() -> None:
    # 500 honest accounts, none flagged: upper bound 3.8415 / 503.8415 = 0.76 %: meets 1 %.
    labels = {f"h{i}": set() for i in range(500)} | {f"b{i}": {D.ASSISTANCE} for i in range(10)}
    caught = {f"b{i}" for i in range(9)}
    assert score(labels, {D.ASSISTANCE: caught})[D.ASSISTANCE].meets(0.9, 0.01)
    # 200 honest accounts, none flagged: 3.8415 / 203.8415 = 1.88 %: the run shows too little.
    small = {f"h{i}": set() for i in range(200)} | {f"b{i}": {D.ASSISTANCE} for i in range(10)}
    assert not score(small, {D.ASSISTANCE: caught})[D.ASSISTANCE].meets(0.9, 0.01)
    # 2 of 500 flagged: 0.4 %, but the upper bound is 1.45 %: misses.
    two = caught | {"h0", "h1"}
    assert not score(labels, {D.ASSISTANCE: two})[D.ASSISTANCE].meets(0.9, 0.01)


def test_seeds_pooled_sum_the_counts_and_bound_the_sums() -> None:
    # Seed A: 12 walkers, all found; 2 of 644 honest flagged: 0.31 %, but the upper bound
    # is 1.13 %, so seed A alone misses. Seed B: 11 of 12 found, none of 650 flagged.
    a = {D.DELIBERATE_DISCONNECT: DetectorScore(12, 644, 12, 2)}
    b = {D.DELIBERATE_DISCONNECT: DetectorScore(12, 650, 11, 0)}
    assert not a[D.DELIBERATE_DISCONNECT].meets(0.9, 0.01)
    pooled = pool([a, b])
    walkers = pooled[D.DELIBERATE_DISCONNECT]
    assert walkers == DetectorScore(24, 1294, 23, 2)
    # 23 of 24: p = 0.958333, z^2 / n = 0.160067, denominator 1.160067; centre
    # = (0.958333 + 0.080033) / 1.160067 = 0.895093; half = 1.96 sqrt(0.0016638 + 0.0016674)
    # / 1.160067 = 0.097514.
    assert walkers.recall == pytest.approx(0.958333, abs=1e-6)
    low, high = walkers.recall_interval
    assert (low, high) == (pytest.approx(0.79758, abs=1e-5), pytest.approx(0.99261, abs=1e-5))
    # 2 of 1294: p = 0.0015456, z^2 / n = 0.0029688, denominator 1.0029688; centre
    # = (0.0015456 + 0.0014844) / 1.0029688 = 0.0030210; half = 1.96 sqrt(1.19259e-6
    # + 5.73567e-7) / 1.0029688 = 0.0025971: upper bound 0.56 %, the pool meets the goal.
    fpr_low, fpr_high = walkers.false_positive_rate_interval
    assert fpr_low == pytest.approx(0.000424, abs=1e-6)
    assert fpr_high == pytest.approx(0.005618, abs=1e-6)
    assert walkers.meets(0.9, 0.01)
    # A detector neither run names is pooled from nothing: no positives, no negatives.
    assert pooled[D.CHAT_ABUSE] == DetectorScore(0, 0, 0, 0)
    assert set(pooled) == set(D)


def test_one_run_pooled_is_itself() -> None:
    labels = {name: {D.CONSULTING} if name in "ab" else set() for name in "abcdefg"}
    alone = score(labels, {D.CONSULTING: {"a", "c"}})
    assert pool([alone]) == alone
    assert pool([]) == {d: DetectorScore(0, 0, 0, 0) for d in D}


def test_a_population_has_every_role_labelled_and_is_the_same_for_a_seed() -> None:
    population = build(11, 24)
    assert build(11, 24).rounds == population.rounds
    assert {p.role for p in population.personas.values()} == set(Role)
    for detector in Detector:  # every detector has somebody to find
        assert any(detector in p.labels for p in population.personas.values()), detector
    # 3 ring, 2 dumpers, 2 tankers, 2 consultants, a bot, a disconnecter, 2 chat abusers
    assert len(population.of(Role.HONEST)) == 24 - 13
    ring = population.of(Role.RING)
    assert len({p.device for p in ring}) == 1 and len({p.address for p in ring}) == 1
    others = [p for p in population.personas.values() if p.role not in (Role.RING,
                                                                        Role.CONSULTANT)]
    assert len({p.address for p in others}) == len(others)  # strangers share nothing
    assert LABELS[Role.CONSULTANT] == {D.CONSULTING, D.MULTI_ACCOUNTING}


def test_the_schedule_seats_nobody_twice_at_once_and_keeps_honest_pairs_apart() -> None:
    population = build(5, 48)
    honest = {p.name for p in population.of(Role.HONEST)}
    met: dict[frozenset[str], int] = {}
    for tables in population.rounds:
        # One account at several tables only in a group of its own (the bot, the
        # disconnecter): its opponents are all different, nobody else is seated twice but
        # a dumping pair (its 10 games over 8 rounds, played one after the other: the
        # runner takes both players' locks), who play nobody else.
        dumping = [t for t in tables if population.personas[t.host].role is Role.DUMP_GIVER]
        pairs = {name for t in dumping for name in (t.host, t.guest)}
        tables = [t for t in tables if t not in dumping]
        seated = [name for t in tables for name in (t.host, t.guest)]
        assert not pairs & set(seated)
        hosts = {t.group for t in tables if t.group}
        assert len(seated) - len(set(seated)) == sum(
            sum(1 for t in tables if t.host == h) - 1 for h in hosts)
        for table in tables:
            pair = frozenset((table.host, table.guest))
            met[pair] = met.get(pair, 0) + 1
    for pair, games in met.items():
        if pair <= honest:
            assert games <= 2  # honest players meet now and then, never 4 times
    dumps = [t for r in population.rounds for t in r if t.plan is Plan.HOST_DUMPS
             and population.personas[t.host].role is Role.DUMP_GIVER]
    assert len(dumps) == 10 * len(population.of(Role.DUMP_GIVER))


@pytest.mark.parametrize("seed", [1414, 7, 20261201])
def test_every_abuser_is_given_its_detector_s_minimum_evidence(seed: int) -> None:
    """The README's minimums, by hand: assistance 60 counted decisions (a money game
    gave the bot 10 to 13: 12 games, 5 at a time), win trading 8 sessions of a pair alternating,
    deliberate disconnects 5 losing walk-outs (6 games at once, 12 to 16 more)."""
    population = build(seed, 24)
    tables = [t for r in population.rounds for t in r]
    (bot,) = population.of(Role.BOT)
    bot_tables = [t for t in tables if bot.name in (t.host, t.guest)]
    assert len(bot_tables) == 12 and {t.group for t in bot_tables} == {bot.name}
    assert population.at_once[bot.name] == 5  # five at a time
    assert all(population.personas[t.guest].role is Role.HONEST for t in bot_tables)
    first, second = (p.name for p in population.of(Role.TANKER))
    traded = [t for t in tables if {t.host, t.guest} == {first, second}]
    assert len(traded) == 8 and all(t.plan is Plan.HOST_DUMPS for t in traded)
    # In schedule order the loser (the host) alternates: the winner changes 7 times.
    assert all(a.host != b.host for a, b in itertools.pairwise(traded))
    (leaver,) = population.of(Role.DISCONNECTER)
    walks = [t for t in tables if t.host == leaver.name]
    assert sum(1 for t in walks if not t.optional) == 6
    # Up to 4 batches of 4, while needed, as far as honest opponents who have not met it
    # twice allow (11 honest players: 22 games at most with the first 6).
    assert 12 <= sum(1 for t in walks if t.optional) <= 16
    assert all(population.personas[t.guest].role is Role.HONEST for t in walks)


def test_too_small_a_population_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 24"):
        build(1, 12)


def test_choice_by_temperature() -> None:
    options = [Option("a", "8/5 6/5", 0.0), Option("b", "13/10 13/8", 0.02),
               Option("c", "24/21 24/16", 0.3)]
    rng = random.Random(3)
    assert {choose(options, 0.0, rng).notation for _ in range(50)} == {"8/5 6/5"}
    picks = [choose(options, 0.02, rng).notation for _ in range(2000)]
    # exp(0) : exp(-1) : exp(-15) = 1 : 0.368 : 3e-7
    assert picks.count("13/10 13/8") / len(picks) == pytest.approx(0.368 / 1.368, abs=0.04)
    assert worst(options).notation == "24/21 24/16"


def test_alerts_flag_their_subjects_under_their_detector_name() -> None:
    from services.antiabuse.evaluation.runner import flagged_accounts
    from tavla.antiabuse.v1 import events_pb2

    alerts = [
        events_pb2.ComplianceAlert(detector="chip_dumping", subject_account_ids=["a", "b"]),
        events_pb2.ComplianceAlert(detector="chip_dumping", subject_account_ids=["b", "c"],
                                   status=events_pb2.ALERT_STATUS_DISMISSED),  # still raised
        events_pb2.ComplianceAlert(detector="multi_accounting", subject_account_ids=["d"]),
        events_pb2.ComplianceAlert(detector="something_else", subject_account_ids=["e"]),
    ]
    flagged = flagged_accounts(alerts)
    assert flagged[D.CHIP_DUMPING] == {"a", "b", "c"}
    assert flagged[D.MULTI_ACCOUNTING] == {"d"}
    assert all(not flagged[d] for d in Detector
               if d not in (D.CHIP_DUMPING, D.MULTI_ACCOUNTING))



def test_a_bot_plays_on_for_the_gammon_where_a_person_cashes() -> None:
    # gnubg's cube actions; "too good" is a position to play on in (doubling there
    # gives up the gammon): a bot, the engine's player, does not double it.
    assert doubles_on(Role.BOT, "double_take") and doubles_on(Role.BOT, "double_pass")
    assert not doubles_on(Role.BOT, "too_good")
    assert doubles_on(Role.HONEST, "too_good")
    assert not doubles_on(Role.BOT, "no_double") and not doubles_on(Role.HONEST, "no_double")


def test_every_persona_registers_with_a_valid_screen_name() -> None:
    for seed, players in ((1, 24), (2**31 - 1, 3000)):
        personas = build(seed, players).personas.values()
        names = [check_screen_name(persona.screen_name) for persona in personas]
        assert len({canonical(name) for name in names}) == len(names)


def test_eval_takes_several_seeds_and_the_tuning_population_refuses_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from services.cli import build_parser, main

    args = build_parser("abuse").parse_args(
        ["abuse", "eval", "--population", "held-out", "--seed", "11", "12", "13"])
    assert args.seed == [11, 12, 13]
    simulate = build_parser("abuse").parse_args(["abuse", "simulate", "--seed", "11"])
    assert simulate.seed == 11
    assert main(["abuse", "eval", "--seed", "11", "12"]) == 2  # refused before any stack
    assert "the tuning population takes one --seed" in capsys.readouterr().err
