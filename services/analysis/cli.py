"""``tavla analysis match FILE.mat [--ply 0|1|2]``: analyse a Jellyfish match file.

Prints one JSON object ``{"players": [{"name", "decisions", "checker_decisions",
"cube_decisions", "error_per_decision", "pr", "doubtful", "bad", "very_bad", "luck",
...}, ...]}`` (the left column's player first), equities in normalised units of the
cube-less money game (EMG); what counts as a decision is
:mod:`services.analysis.domain.match_analysis`. Runs in this process (GNU Backgammon's
nets, GPLv3, loaded here as in a worker). A file that cannot be read or is not
Jellyfish ``.mat`` is exit status 2 with a one-line message naming the line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from services.analysis import worker
from services.analysis.config import default_cache_dir
from services.analysis.domain.match_analysis import analyse, summarise
from services.analysis.domain.matread import MatFileError, parse

if TYPE_CHECKING:
    # Only subscriptable for the type checker on Python 3.11.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
USAGE_ERROR = 2


def register(subparsers: Subparsers) -> None:
    analysis = subparsers.add_parser("analysis", help="analysis tools: grade a recorded match")
    commands = analysis.add_subparsers(dest="analysis_command", required=True, metavar="SUBCOMMAND")
    match = commands.add_parser(
        "match",
        help="analyse a Jellyfish .mat file and print each player's figures as JSON",
        description="Grade every checker play and cube decision of a .mat file.",
    )
    match.add_argument("file", type=Path, help="the .mat file (GNU Backgammon or Tavla export)")
    match.add_argument("--ply", type=int, choices=(0, 1, 2), default=0, help="search depth")
    match.set_defaults(handler=_match)


def _match(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        print(f"tavla analysis match: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return USAGE_ERROR
    try:
        record = parse(text)
        worker.start(str(default_cache_dir()))
        decisions = analyse(record, worker.engine(), args.ply)
    except MatFileError as error:
        print(f"tavla analysis match: {args.file}: {error}", file=sys.stderr)
        return USAGE_ERROR
    players = summarise(record.names, decisions)
    print(json.dumps({"players": [p.as_json() for p in players]}))
    return 0
