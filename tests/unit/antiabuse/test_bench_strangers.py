"""The anti-abuse bench's players are strangers: one address each, at every service."""

from __future__ import annotations

from pathlib import Path

from services.antiabuse.bench import StrangersKeys
from services.kit.benchstack import BenchKeys
from services.kit.client_signals import CLIENT_ADDRESS_HEADER


def _address(metadata: list[tuple[str, str]]) -> str:
    return dict(metadata)[CLIENT_ADDRESS_HEADER]


def test_a_player_keeps_its_address_across_the_benchs_callers(tmp_path: Path) -> None:
    keys = StrangersKeys(BenchKeys.generate(tmp_path).run_dir)
    wallet, game = keys.players(), keys.players()  # the funding's and the load's
    at_wallet = [_address(wallet(f"p{n}")) for n in range(4)]
    # The game meets them in another order: each must still call from its own home.
    at_game = {f"p{n}": _address(game(f"p{n}")) for n in (3, 1, 0, 2)}
    assert [at_game[f"p{n}"] for n in range(4)] == at_wallet
    assert len(set(at_wallet)) == 4  # strangers: no address shared
