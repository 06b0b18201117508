"""``tavla serve game`` refuses to start without an analysis service, naming the variable.

Without one every disconnection would be split evenly, "not analysed", by omission; the
even split is only for an analysis service that stays unreachable past its wait.
"""

from __future__ import annotations

from tests.support.processes import service_environment, tavla


async def test_serve_game_refuses_to_start_without_an_analysis_address() -> None:
    # Nothing listens on these: the process must stop on its settings before connecting.
    env = service_environment(
        "game",
        "postgresql+asyncpg://tavla@127.0.0.1:9/tavla_game",
        "127.0.0.1:9",
        accounts_address="127.0.0.1:9",
    )
    del env["TAVLA_ANALYSIS_ADDRESS"]
    code, output = await tavla("serve", "game", env=env)
    assert code == 2, output
    assert output.strip().splitlines()[-1] == (
        "tavla serve game: TAVLA_ANALYSIS_ADDRESS is required but not set"
    )
