"""The tournament lobby through the real Envoy gateway (the dev config, mutual TLS to the
service's gateway port): players list, register and read the bracket with a token, nothing
without one, and the operators' CreateTournament has no route at all."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from services.kit.devstack.keys import PRIVATE_KEY_FILE
from services.kit.devstack.supervisor import Supervisor
from tests.integration.tournaments.conftest import Venue
from tests.support.gateway import envoy_in_front
from tests.support.identity import CERTIFICATES, PLAYER_KEY_FILE, player_token
from tests.support.tournaments import new_player, sit_and_go, wait_until
from tests.support.wallet import balance, top_up


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(tmp_path: Path, supervisor: Supervisor, venue: Venue) -> AsyncIterator[str]:
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)  # the JWKS of the test tokens
    async with envoy_in_front(
        tmp_path, supervisor, {"tournaments": venue.tournaments.gateway_port},
        upstream_tls=CERTIFICATES.upstream_tls(),
    ) as base_url:  # fmt: skip
        yield base_url


def bearer(account: str) -> dict[str, str]:
    return {"authorization": f"Bearer {player_token(account, residence='MT')}"}


async def test_a_play_money_sit_and_go_through_the_gateway(gateway: str, venue: Venue) -> None:
    created = await venue.stub.CreateTournament(
        sit_and_go(2, buy_in=10_000, fee=500, currency="PLAY")
    )
    tid = created.tournament_id
    first, second = new_player(), new_player()
    for player in (first, second):
        await top_up(venue.wallet, player)
    async with httpx.AsyncClient(base_url=gateway, timeout=20) as client:
        assert (await client.get("/v1/tournaments")).status_code == 401
        listed = await client.get("/v1/tournaments?currency=PLAY", headers=bearer(first))
        assert listed.status_code == 200, listed.text
        shown = next(t for t in listed.json()["tournaments"] if t["tournamentId"] == tid)
        assert shown["rules"]["sitAndGo"]["seats"] == 2
        assert shown["rules"]["buyIn"] == "10000" and shown["status"] == "STATUS_REGISTERING"

        for player in (first, second):
            answer = await client.post(
                f"/v1/tournaments/{tid}:register", json={}, headers=bearer(player)
            )
            assert answer.status_code == 200, answer.text
        assert (await client.post(f"/v1/tournaments/{tid}:register", json={})).status_code == 401
        # An operator's method is not a route, token or not.
        refused = await client.post("/v1/tournaments", json={}, headers=bearer(first))
        assert refused.status_code == 404

        await wait_until(venue.stub, tid, first, lambda t: any(m.game_id for m in t.bracket))
        shown = (await client.get(f"/v1/tournaments/{tid}", headers=bearer(second))).json()
        assert shown["status"] == "STATUS_RUNNING"
        [final] = shown["bracket"]
        assert final["state"] == "MATCH_STATE_PLAYING" and sorted(final["players"]) == sorted(
            [first, second]
        )
        unknown = await client.get("/v1/tournaments/nope", headers=bearer(first))
        assert unknown.status_code == 404 and unknown.json()["code"] == 5
    assert await balance(venue.wallet, first, "PLAY") == (1_000_000 - 10_500, 10_000)
