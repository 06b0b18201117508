"""Rules library commands: ``tavla rules plays``, ``tavla dice verify``, ``tavla bench rules``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from services.backgammon import dice, position_id
from services.backgammon.errors import RulesError
from services.backgammon.plays import legal_plays

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]


def plays_for_line(line: str) -> dict[str, Any]:
    """The output object for one input line of ``tavla rules plays``."""
    try:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc}") from exc
        if not isinstance(request, dict):
            raise ValueError("each line must be a JSON object")
        pid = request["position_id"]
        rolled = request["dice"]
        if not isinstance(pid, str) or not isinstance(rolled, list):
            raise ValueError('expected {"position_id": "<ID>", "dice": [d1, d2]}')
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in rolled):
            raise ValueError("dice must be integers")
        board = position_id.decode(pid)
        found = legal_plays(board, rolled)
    except (ValueError, KeyError, TypeError) as exc:
        reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        return {"error": reason}
    return {
        "position_id": pid,
        "dice": rolled,
        "plays": [{"result": position_id.encode(p.result), "move": p.notation} for p in found],
    }


def run_plays(lines: Iterable[str], out: TextIO) -> int:
    for line in lines:
        out.write(json.dumps(plays_for_line(line)) + "\n")
        out.flush()
    return 0


def _plays_handler(args: argparse.Namespace) -> int:
    return run_plays(sys.stdin, sys.stdout)


def verify_record(data: dict[str, Any]) -> dice.DiceRecord:
    try:
        return dice.DiceRecord(
            commitment=str(data["commitment"]),
            server_seed=bytes.fromhex(str(data["server_seed"])),
            client_seed=str(data["client_seed"]),
            rolls=tuple((int(r[0]), int(r[1])) for r in data["rolls"]),
        )
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise RulesError(
            'expected {"commitment": hex, "server_seed": hex, "client_seed": str, '
            f'"rolls": [[d1, d2], ...]}}: {exc}'
        ) from exc


def _verify_handler(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.record == "-" else Path(args.record).read_text()
    try:
        record = verify_record(json.loads(text))
        dice.verify(record)
    except (RulesError, json.JSONDecodeError) as exc:
        print(f"FAILED: {exc}")
        return 1
    print(f"OK: {len(record.rolls)} rolls match commitment {record.commitment}")
    return 0


def _bench_handler(args: argparse.Namespace) -> int:
    from services.backgammon import bench

    data_dir = Path(args.data) if args.data else None
    rates, counts = bench.run(data_dir, rounds=args.rounds)
    for key, rate in rates.items():
        expected = bench.EXPECTED_COUNTS[key]
        print(
            f"{key:15} plays {counts[key]:>7} (expected {expected})  ours {rate.ours:>10.0f}/s  "
            f"gnubg {rate.gnubg:>10.0f}/s  ratio {rate.ratio:.2f}"
        )
    print(json.dumps({key: rate.as_dict() for key, rate in rates.items()}))
    return 0 if counts == bench.EXPECTED_COUNTS else 1


def register(subparsers: SubParsers) -> None:
    rules = subparsers.add_parser("rules", help="backgammon rules library tools")
    rules_sub = rules.add_subparsers(dest="rules_command", required=True)
    plays = rules_sub.add_parser(
        "plays", help='legal plays: JSON lines {"position_id", "dice"} on stdin, one line out each'
    )
    plays.set_defaults(handler=_plays_handler)

    dice_parser = subparsers.add_parser("dice", help="provably fair dice")
    dice_sub = dice_parser.add_subparsers(dest="dice_command", required=True)
    verify = dice_sub.add_parser(
        "verify", help="check a finished game's rolls against its commitment"
    )
    verify.add_argument(
        "record", help="JSON file (or - for stdin): commitment, server_seed, client_seed, rolls"
    )
    verify.set_defaults(handler=_verify_handler)


def register_bench(bench_subparsers: SubParsers) -> None:
    """Add ``rules`` to the ``tavla bench`` command."""
    bench_rules = bench_subparsers.add_parser(
        "rules", help="legal-play generation against gnubg-nn on the wildbg positions"
    )
    bench_rules.add_argument(
        "--data", help="folder with contact.csv and race.csv (default ../shared/data/wildbg)"
    )
    bench_rules.add_argument("--rounds", type=int, default=3, help="timing rounds, best kept")
    bench_rules.set_defaults(handler=_bench_handler)
