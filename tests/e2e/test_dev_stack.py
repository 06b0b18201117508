"""`tavla dev` end to end: the platform's behaviour behind the gateway, on the session's
shared stack (`dev_stack`, tests/e2e/conftest.py). The tests of `tavla dev` itself
(stopping, killing, misconfiguring it) start their own: tests/e2e/test_dev_lifecycle.py.
"""

from __future__ import annotations

import time
import uuid

import grpc
import httpx
import pytest

from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.geo.v1 import geo_pb2, geo_pb2_grpc
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.e2e.devstack import (
    DevRun,
    client_from_own_address,
    sign_up_from_a_new_address,
    signed_up,
)


def create_table(run: DevRun, accounts: list[str]) -> str:
    """What matchmaking does: CreateGame is internal, so straight to the game service,
    with matchmaking's service token (its key is in the run dir)."""
    address = run.grpc_address("game")
    rules = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        stake=money_pb2.Money(minor_units=100, currency="PLAY"),
        clock=game_pb2.ClockPreset(name="e2e"),
    )
    request = game_pb2.CreateGameRequest(
        table_id=f"e2e-{uuid.uuid4().hex[:8]}",
        players=[game_pb2.Player(account_id=a, display_name=f"p{i}", rating=1500.0)
                 for i, a in enumerate(accounts)],
        rules=rules,
    )
    with grpc.insecure_channel(address) as channel:
        game = game_pb2_grpc.GameServiceStub(channel).CreateGame(
            request, timeout=30, metadata=run.service_token("matchmaking", "game")
        )
    return game.game_id


def test_players_take_turns_through_the_gateway(dev_stack: DevRun) -> None:
    """Two signed-in players take turns over REST; only the awaited one may act."""
    run, turns = dev_stack, 6
    with httpx.Client(base_url=run.gateway, timeout=10) as client:
        players = {p.account_id: p.bearer for p in (signed_up(client, n) for n in ("ann", "bob"))}
        game_id = create_table(run, list(players))
        view = client.get(f"/v1/games/{game_id}", headers=next(iter(players.values())))
        assert view.status_code == 200, view.text
        for _ in range(turns):
            game = view.json()
            awaited, version = game["awaitingAccountId"], int(game["version"])
            other = next(a for a in players if a != awaited)
            if game["phase"] == "TURN_PHASE_MOVE":
                action, body = "move", {"notation": game["legalPlays"][0]["notation"]}
            else:
                action, body = "roll", {}
            path = f"/v1/games/{game_id}:{action}"
            out_of_turn = client.post(
                path, headers=players[other], json={"expectedVersion": version, **body}
            )
            assert out_of_turn.status_code == 400, out_of_turn.text  # FAILED_PRECONDITION
            assert "not your turn" in out_of_turn.text
            view = client.post(
                path, headers=players[awaited], json={"expectedVersion": version, **body}
            )
            assert view.status_code == 200, view.text
            assert int(view.json()["version"]) == version + 1
        retried = client.post(
            path, headers=players[awaited], json={"expectedVersion": version, **body}
        )
        assert retried.json() == view.json()  # the same call again: the stored answer
        stale = client.post(f"/v1/games/{game_id}:double", headers=players[awaited],
                            json={"expectedVersion": version})
        assert stale.status_code == 409, stale.text  # ABORTED: reload and decide again


def test_deposits_ask_geo_and_the_fee_is_quoted_through_the_gateway(dev_stack: DevRun) -> None:
    """A sandbox deposit lands after the provider confirms it; the fee is quoted up front.

    Real money asks the geo service first. The dev gateway believes one proxy hop,
    so the test plays the proxy and says where the player is (X-Forwarded-For):
    from Malta the USD deposit lands; from Florida, or from the bare loopback
    address geo places nowhere, it is refused and nothing lands.
    """
    from services.geo.devdata import FLORIDA_IP, MALTA_IP

    with httpx.Client(base_url=dev_stack.gateway, timeout=10) as client:
        bearer = signed_up(client, "cat").bearer

        def deposit(key: str, via: dict[str, str]) -> httpx.Response:
            return client.post("/v1/wallet/deposits", headers={**bearer, **via}, json={
                "amount": {"minorUnits": "2500", "currency": "USD"},
                "idempotencyKey": key, "paymentMethod": "sandbox",
            })

        for key, via, reason in (
            ("from-florida", {"X-Forwarded-For": FLORIDA_IP}, "location_restricted"),
            ("from-loopback", {}, "location_unplaced"),
        ):
            refused = deposit(key, via)
            assert refused.status_code == 400, refused.text  # FAILED_PRECONDITION
            assert "depositing" in refused.json()["message"], refused.text
            assert reason in refused.json()["message"], refused.text
        landed = deposit("from-malta", {"X-Forwarded-For": MALTA_IP})
        assert landed.status_code == 200, landed.text
        assert landed.json()["status"] == "PAYMENT_STATUS_PENDING"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the sandbox confirms after a couple of seconds
            balances = client.get("/v1/wallet/balances", headers=bearer).json()["balances"]
            usd = [b for b in balances if b["currency"] == "USD"]
            if usd and usd[0]["available"]["minorUnits"] == "2500":
                break
            time.sleep(0.25)
        else:
            pytest.fail(f"the deposit never landed: {balances}")
        # The schedule's own example: $5 stake, gammon, cube 1, ratings 1500/1500.
        quote = client.post("/v1/wallet/commission:quote", headers=bearer, json={
            "kind": "SETTLEMENT_KIND_SINGLE_GAME",
            "stake": {"minorUnits": "500", "currency": "USD"}, "cubeValue": 1,
            "result": "RESULT_TYPE_GAMMON", "ratingA": 1500, "ratingB": 1500,
        })
        assert quote.status_code == 200, quote.text
        figures = quote.json()
        assert figures["winnerCredit"]["minorUnits"] == "902"
        assert figures["loserDebit"]["minorUnits"] == "1000"


def test_a_client_address_is_believed_from_the_gateway_only(dev_stack: DevRun) -> None:
    """The same player and token: from Malta through the gateway the deposit goes ahead;
    straight to the wallet's port, with the header the gateway would set saying Malta, it
    is refused as unplaced (the header proves nothing without the gateway's certificate)."""
    from services.geo.devdata import MALTA_IP

    with httpx.Client(base_url=dev_stack.gateway, timeout=10) as client:
        bearer = signed_up(client, "eve").bearer
        body = {"amount": {"minorUnits": "1500", "currency": "USD"},
                "idempotencyKey": "via-gateway", "paymentMethod": "sandbox"}
        landed = client.post("/v1/wallet/deposits", json=body,
                             headers={**bearer, "X-Forwarded-For": MALTA_IP})
        assert landed.status_code == 200, landed.text
    with grpc.insecure_channel(dev_stack.grpc_address("wallet")) as channel:
        wallet = wallet_pb2_grpc.WalletServiceStub(channel)
        deposit = wallet_pb2.DepositRequest(
            amount=money_pb2.Money(minor_units=1500, currency="USD"),
            idempotency_key="direct", payment_method="sandbox",
        )
        with pytest.raises(grpc.RpcError) as refused:
            wallet.Deposit(deposit, timeout=10, metadata=[
                ("authorization", bearer["authorization"]), ("x-tavla-client-address", MALTA_IP),
            ])
        assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "[location_unknown]" in (refused.value.details() or "")


def test_play_money_top_up_through_the_gateway(dev_stack: DevRun) -> None:
    """Free play money through the gateway: 10,000.00 PLAY at once, then not again this hour."""
    with httpx.Client(base_url=dev_stack.gateway, timeout=10) as client:
        bearer = signed_up(client, "dee").bearer
        top_up = client.post("/v1/wallet/play-money:topUp", headers=bearer,
                             json={"idempotencyKey": "first-top-up"})
        assert top_up.status_code == 200, top_up.text
        assert top_up.json()["credited"] == {"minorUnits": "1000000", "currency": "PLAY"}
        again = client.post("/v1/wallet/play-money:topUp", headers=bearer,
                            json={"idempotencyKey": "second-top-up"})
        assert again.status_code == 429, again.text  # RESOURCE_EXHAUSTED: once an hour


def test_sign_up_log_in_and_read_through_the_gateway(dev_stack: DevRun) -> None:
    """The README's walk-through: REST in, gRPC to accounts, token checked by Envoy."""
    # Behind the gateway, reads need a token: the JWT filter answers before any service.
    assert httpx.get(dev_stack.gateway + "/v1/accounts/someone", timeout=5).status_code == 401
    with httpx.Client(base_url=dev_stack.gateway, timeout=10) as client:
        account_id, email, bearer = signed_up(client, "ann")

        mine = client.get(f"/v1/accounts/{account_id}", headers=bearer)
        assert mine.status_code == 200, mine.text
        assert mine.json()["email"] == email
        assert (mine.json()["residence"], mine.json()["dateOfBirth"]) == ("MT", "1990-04-21")

        # Accounts asks geo: a resident of a fully blocked country may not register.
        name = f"cuba{uuid.uuid4().hex[:6]}"
        refused = sign_up_from_a_new_address(client, {
            "email": f"{name}@example.com", "password": "correct horse battery",
            "displayName": name, "residence": "CU", "dateOfBirth": "1990-04-21"})
        assert refused.status_code == 400, refused.text
        assert "[residence_restricted]" in refused.json()["message"], refused.text
        forged = client.get(f"/v1/accounts/{account_id}",
                            headers={"x-tavla-account-id": account_id})
        assert forged.status_code == 401

        # Internal methods (service-to-service only) have no route, token or not.
        internal = client.post("/tavla.wallet.v1.WalletService/PlaceHold", headers={
            **bearer, "content-type": "application/grpc", "te": "trailers"}, content=b"")
        # Envoy answers a gRPC request's 404 the gRPC way: grpc-status 12, UNIMPLEMENTED.
        assert internal.headers.get("grpc-status") == "12", internal.headers
        assert "x-envoy-upstream-service-time" not in internal.headers  # never left Envoy

    with client_from_own_address(dev_stack.gateway) as client:
        refresh_and_log_out_through_the_gateway(client, email)


def refresh_and_log_out_through_the_gateway(client: httpx.Client, email: str) -> None:
    """The README's session lines: rotation, reuse detection, logout; no token needed."""
    login = client.post("/v1/sessions", json={"email": email, "password": "correct horse battery"})
    first = login.json()["refreshToken"]
    rotated = client.post("/v1/sessions:refresh", json={"refreshToken": first})
    assert rotated.status_code == 200, rotated.text
    second = rotated.json()["refreshToken"]
    assert second != first and rotated.json()["accessToken"]
    reused = client.post("/v1/sessions:refresh", json={"refreshToken": first})
    assert reused.status_code == 401 and "already used" in reused.text, reused.text
    # Reuse ended the session: the newest token is dead too.
    assert client.post("/v1/sessions:refresh", json={"refreshToken": second}).status_code == 401
    other = client.post("/v1/sessions", json={"email": email, "password": "correct horse battery"})
    token = other.json()["refreshToken"]
    assert client.post("/v1/sessions:logout", json={"refreshToken": token}).status_code == 200
    assert client.post("/v1/sessions:refresh", json={"refreshToken": token}).status_code == 401


def test_the_wallet_port_verifies_tokens_itself(dev_stack: DevRun) -> None:
    """Past the gateway: the wallet verifies tokens itself (with the JWKS it fetched from
    accounts), ignores the identity header and keeps its holds to services."""
    run = dev_stack
    with httpx.Client(base_url=run.gateway, timeout=10) as client:
        account_id, _, bearer = signed_up(client, "dan")
    with grpc.insecure_channel(run.grpc_address("wallet")) as channel:
        wallet = wallet_pb2_grpc.WalletServiceStub(channel)
        withdraw = wallet_pb2.WithdrawRequest(
            amount=money_pb2.Money(minor_units=100, currency="USD"), idempotency_key="w-1"
        )
        with pytest.raises(grpc.RpcError) as forged:
            wallet.Withdraw(withdraw, timeout=10, metadata=[("x-tavla-account-id", account_id)])
        assert forged.value.code() is grpc.StatusCode.UNAUTHENTICATED
        token = bearer["authorization"]
        balances = wallet.GetBalances(
            wallet_pb2.GetBalancesRequest(), timeout=10, metadata=[("authorization", token)]
        )
        assert isinstance(balances, wallet_pb2.GetBalancesResponse)
        hold = wallet_pb2.PlaceHoldRequest(
            account_id=account_id, amount=money_pb2.Money(minor_units=100, currency="USD"),
            table_id="t-e2e", idempotency_key="h-1",
        )
        with pytest.raises(grpc.RpcError) as as_player:
            wallet.PlaceHold(hold, timeout=10, metadata=[("authorization", token)])
        assert as_player.value.code() is grpc.StatusCode.PERMISSION_DENIED


def test_geo_decides_on_the_dev_databases(dev_stack: DevRun) -> None:
    """`tavla dev` gives geo its small databases: it decides, as the wallet asks it to."""
    from services.geo.devdata import FLORIDA_IP, MALTA_IP

    run = dev_stack
    with grpc.insecure_channel(run.grpc_address("geo")) as channel:
        geo = geo_pb2_grpc.GeoServiceStub(channel)
        metadata = run.service_token("wallet", "geo")

        def check(address: str, residence: str) -> geo_pb2.LocationDecision:
            request = geo_pb2.CheckLocationRequest(
                ip_address=address, purpose=geo_pb2.PURPOSE_DEPOSIT,
                declared_residence=residence, account_id="e2e",
            )  # fmt: skip
            reply: geo_pb2.LocationDecision = geo.CheckLocation(
                request, timeout=10, metadata=metadata
            )
            return reply

        florida = check(FLORIDA_IP, "MT")
        assert florida.decision == geo_pb2.DECISION_BLOCK
        assert (florida.region_code, [r.code for r in florida.reasons]) == (
            "US-FL", ["location_restricted"]
        )
        malta = check(MALTA_IP, "MT")
        assert (malta.decision, malta.country_code) == (geo_pb2.DECISION_ALLOW, "MT")
