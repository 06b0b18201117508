"""Session <-> JSON-ready dicts for the ``games.state`` column and the action log.

The secret dice seed is not part of the state: it lives in its own column. The
library game's action history is not stored either (the action log is the
history; :func:`services.game.service.GameService.match_record` replays it).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from services.backgammon.board import Board
from services.backgammon.cube import Cube, CubeRules
from services.backgammon.game import Game, Phase
from services.backgammon.match import MatchScore
from services.backgammon.resign import Resignation
from services.backgammon.scoring import EndReason, GameResult, WinKind
from services.game.domain import (
    RECONNECT_WINDOW,
    Action,
    Cause,
    ClockPreset,
    Command,
    Figures,
    Kind,
    Located,
    Outcome,
    Penalty,
    Presence,
    Seat,
    Session,
    Status,
    Stopped,
    TableRules,
)
from services.kit.json_text import to_json

State = dict[str, Any]


def _ms(span: timedelta) -> int:
    return span // timedelta(milliseconds=1)


def _span(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _moment(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def rules_to_state(rules: TableRules) -> State:
    clock = rules.clock
    return {
        "kind": rules.kind.value,
        "length": rules.match_length,
        "stake": rules.stake_minor,
        "currency": rules.currency,
        "cap": rules.cube_cap,
        "beaver": rules.beaver,
        "jacoby": rules.jacoby,
        "crawford": rules.crawford,
        "clock": [
            clock.name,
            _ms(clock.move_delay),
            _ms(clock.reserve_per_point),
            _ms(clock.reserve_per_game),
            clock.penalty.value,
        ],
        "reconnect_ms": _ms(rules.reconnect_window),
        "table_stakes": [rules.table_stakes_minor, rules.at_risk_minor],
        "rated": rules.rated,
    }


def rules_from_state(data: State) -> TableRules:
    name, delay, per_point, per_game, penalty = data["clock"]
    return TableRules(
        kind=Kind(data["kind"]),
        match_length=data["length"],
        stake_minor=data["stake"],
        currency=data["currency"],
        cube_cap=data["cap"],
        beaver=data["beaver"],
        jacoby=data["jacoby"],
        crawford=data["crawford"],
        clock=ClockPreset(name, _span(delay), _span(per_point), _span(per_game), Penalty(penalty)),
        # Sessions stored before the window was a setting had the house's five minutes.
        reconnect_window=_span(data.get("reconnect_ms", _ms(RECONNECT_WINDOW))),
        # Sessions stored before table stakes were ordinary money games and matches.
        table_stakes_minor=data.get("table_stakes", [0, 0])[0],
        at_risk_minor=data.get("table_stakes", [0, 0])[1],
        # Sessions stored before rated tables were rated by their stake alone.
        rated=data.get("rated", False),
    )


def _game_to_state(game: Game) -> State:
    cube, rules, result = game.cube, game.rules, game.result
    return {
        "board": [list(game.board.player), list(game.board.opponent)],
        "turn": game.turn,
        "phase": game.phase.value,
        "cube": [cube.value, cube.owner, cube.offered_by, cube.beaver_pending],
        "rules": [rules.cap, rules.beavers, rules.jacoby, rules.crawford_game],
        "dice": None if game.dice is None else list(game.dice),
        "resign": None
        if game.resignation is None
        else [game.resignation.by, int(game.resignation.kind)],
        "result": None
        if result is None
        else [
            result.winner,
            int(result.kind),
            result.cube_value,
            result.points,
            result.reason.value,
        ],
    }


def _game_from_state(data: State) -> Game:
    value, owner, offered_by, beaver_pending = data["cube"]
    cap, beavers, jacoby, crawford = data["rules"]
    resign, result, dice = data["resign"], data["result"], data["dice"]
    return Game(
        board=Board.trusted(tuple(data["board"][0]), tuple(data["board"][1])),
        turn=data["turn"],
        phase=Phase(data["phase"]),
        cube=Cube(value, owner, offered_by, beaver_pending),
        rules=CubeRules(cap, beavers, jacoby, crawford),
        dice=None if dice is None else (dice[0], dice[1]),
        resignation=None if resign is None else Resignation(resign[0], WinKind(resign[1])),
        result=None
        if result is None
        else GameResult(result[0], WinKind(result[1]), result[2], result[3], EndReason(result[4])),
    )


def _outcome_to_state(outcome: Outcome | None) -> State | None:
    if outcome is None:
        return None
    return {
        "winner": outcome.winner,
        "kind": None if outcome.kind is None else int(outcome.kind),
        "cube": outcome.cube_value,
        "points": outcome.points,
        "cause": outcome.cause.value,
        "shares": None if outcome.shares is None else [str(s) for s in outcome.shares],
        "analysed": outcome.analysed,
        "figures": figures_to_state(outcome.figures),
        "stopped": _stopped_to_state(outcome.stopped),
    }


def _outcome_from_state(data: State | None) -> Outcome | None:
    if data is None:
        return None
    shares = data["shares"]
    return Outcome(
        winner=data["winner"],
        kind=None if data["kind"] is None else WinKind(data["kind"]),
        cube_value=data["cube"],
        points=data["points"],
        cause=Cause(data["cause"]),
        shares=None if shares is None else (Decimal(shares[0]), Decimal(shares[1])),
        analysed=data["analysed"],
        figures=figures_from_state(data.get("figures")),
        stopped=_stopped_from_state(data.get("stopped")),
    )


def _stopped_to_state(stopped: Stopped | None) -> State | None:
    if stopped is None:
        return None
    return {
        "player": stopped.player,
        "position_id": stopped.position_id,
        "match_id": stopped.gnubg_match_id,
        "on_roll": stopped.on_roll,
        "race": stopped.race,
    }


def _stopped_from_state(data: State | None) -> Stopped | None:
    """A stopped position (absent from states saved before it was recorded: nothing to value)."""
    if data is None:
        return None
    return Stopped(
        data["player"], data["position_id"], data["match_id"], data["on_roll"], data["race"]
    )


def figures_to_state(figures: Figures | None) -> State | None:
    if figures is None:
        return None
    return {
        "method": figures.method,
        "basis": figures.basis,
        "on_roll": figures.on_roll,
        "plies": figures.plies,
        "equity": figures.cubeful_equity,
        "mwc": figures.match_winning_chance,
    }


def figures_from_state(data: State | None) -> Figures | None:
    if data is None:
        return None
    return Figures(
        data["method"], data["basis"], data["on_roll"], data["plies"], data["equity"], data["mwc"]
    )


def _presence_to_state(presence: Presence) -> list[Any]:
    state = [presence.connected, _when(presence.disconnected_at), _when(presence.deadline)]
    if presence.blocked:  # absent in states written before location checks existed
        state.append(presence.blocked)
    return state


def _presence_from_state(data: list[Any]) -> Presence:
    blocked = data[3] if len(data) > 3 else ""
    return Presence(data[0], _moment(data[1]), _moment(data[2]), blocked)


def seats_to_state(seats: tuple[Seat, Seat]) -> list[list[Any]]:
    return [[s.account_id, s.display_name, s.rating, s.hold_id] for s in seats]


def seats_from_state(data: list[list[Any]]) -> tuple[Seat, Seat]:
    first, second = (Seat(row[0], row[1], float(row[2]), row[3]) for row in data)
    return first, second


def _fixed_state(session: Session) -> State:
    """What never changes after the session is created."""
    return {
        "table_id": session.table_id,
        "rules": rules_to_state(session.rules),
        "seats": seats_to_state(session.seats),
        "client_seed": session.client_seed,
        "created_at": session.created_at.isoformat(),
    }


def _changing_state(session: Session) -> State:
    score = session.score
    return {
        "game_number": session.game_number,
        "game": _game_to_state(session.game),
        "score": [list(score.score), score.crawford_game, score.post_crawford, score.games_played],
        "roll_count": session.roll_count,
        "decision_started_at": session.decision_started_at.isoformat(),
        "reserves": [_ms(r) for r in session.reserves],
        "presence": [_presence_to_state(p) for p in session.presence],
        "last_outcome": _outcome_to_state(session.last_outcome),
        "winner": session.winner,
    }


def session_to_state(session: Session) -> State:
    return {**_fixed_state(session), **_changing_state(session)}


# A session's fields that never change after creation, as JSON members, kept per game.
# An entry is used only for the very objects it was made from (sessions are evolved by
# copying their fields, so one game's sessions share them until it is read again).
_FIXED_TEXTS: dict[str, tuple[str, TableRules, tuple[Seat, Seat], str, datetime, str]] = {}
_FIXED_TEXTS_KEPT = 20_000  # as many as the session cache holds


def _fixed_text(session: Session) -> str:
    game_id, rules, seats = session.game_id, session.rules, session.seats
    kept = _FIXED_TEXTS.get(game_id)
    if (
        kept is not None
        and kept[1] is rules
        and kept[2] is seats
        and kept[4] is session.created_at
        and kept[0] == session.table_id
        and kept[3] == session.client_seed
    ):
        return kept[5]
    text = to_json(_fixed_state(session))[1:-1]
    if len(_FIXED_TEXTS) >= _FIXED_TEXTS_KEPT:
        _FIXED_TEXTS.clear()
    _FIXED_TEXTS[game_id] = (
        session.table_id,
        rules,
        seats,
        session.client_seed,
        session.created_at,
        text,
    )
    return text


def state_json(session: Session) -> str:
    """:func:`session_to_state` as JSON text, its fixed fields encoded once per game."""
    return "{" + _fixed_text(session) + ", " + to_json(_changing_state(session))[1:]


def session_from_state(
    game_id: str,
    version: int,
    status: str,
    updated_at: datetime,
    data: State,
    seed: bytes,
    located: tuple[Located | None, Located | None] = (None, None),
) -> Session:
    rules = rules_from_state(data["rules"])
    points, crawford_game, post_crawford, games_played = data["score"]
    reserves = data["reserves"]
    presence = data["presence"]
    return Session(
        game_id=game_id,
        table_id=data["table_id"],
        rules=rules,
        seats=seats_from_state(data["seats"]),
        client_seed=data["client_seed"],
        created_at=datetime.fromisoformat(data["created_at"]),
        updated_at=updated_at,
        version=version,
        status=Status(status),
        game_number=data["game_number"],
        game=_game_from_state(data["game"]),
        score=MatchScore(
            rules.match_rules(),
            (points[0], points[1]),
            crawford_game,
            post_crawford,
            games_played,
        ),
        seed=seed,
        roll_count=data["roll_count"],
        decision_started_at=datetime.fromisoformat(data["decision_started_at"]),
        reserves=(_span(reserves[0]), _span(reserves[1])),
        presence=(_presence_from_state(presence[0]), _presence_from_state(presence[1])),
        last_outcome=_outcome_from_state(data["last_outcome"]),
        winner=data["winner"],
        located=located,
    )


def command_to_state(command: Command) -> State:
    data: State = {"action": command.action.value, "player": command.player}
    if command.text:
        data["text"] = command.text
    if command.shares is not None:
        data["shares"] = [str(s) for s in command.shares]
        data["analysed"] = command.analysed
        if command.figures is not None:
            data["figures"] = figures_to_state(command.figures)
    return data


def command_from_state(data: State) -> Command:
    shares = data.get("shares")
    return Command(
        action=Action(data["action"]),
        player=data["player"],
        text=data.get("text", ""),
        shares=None if shares is None else (Decimal(shares[0]), Decimal(shares[1])),
        analysed=data.get("analysed", False),
        figures=figures_from_state(data.get("figures")),
    )
