"""The pure parts of service-side identity: token checks, the JWKS cache, who may call what."""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import SimpleNamespace
from typing import Any, cast

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.authn import Access, Authenticator, access_table
from services.kit.credentials import PlayerVerification
from services.kit.errors import PermissionDenied, Unauthenticated, Unavailable
from services.kit.jwks import JwksCache
from services.kit.keys import PublicKey, key_id, public_jwk
from services.kit.player_tokens import PlayerTokenVerifier, StaticKeys, bearer_token
from services.kit.server import Readiness
from services.kit.service_tokens import ServiceTokenMinter, ServiceTokenVerifier
from tavla.accounts.v1 import accounts_pb2  # noqa: F401  (puts its services in the pool)
from tavla.common.v1 import auth_pb2
from tavla.wallet.v1 import wallet_pb2  # noqa: F401
from tests.support.identity import player_token

KEY = ec.generate_private_key(ec.SECP256R1())
KID = key_id(KEY.public_key())


class CountingKeys:
    """A key source that counts lookups and can change its keys."""

    def __init__(self, keys: dict[str, PublicKey]) -> None:
        self.keys = keys
        self.lookups = 0
        self.version = 0

    async def key(self, kid: str) -> PublicKey | None:
        self.lookups += 1
        return self.keys.get(kid)


# --- access tokens ---------------------------------------------------------------------------


async def test_a_valid_access_token_names_its_subject() -> None:
    verifier = PlayerTokenVerifier(StaticKeys({KID: KEY.public_key()}))
    assert await verifier.subject(player_token("acct-1", key=KEY)) == "acct-1"


@pytest.mark.parametrize(
    ("token", "phrase"),
    [
        (lambda: player_token("a", key=KEY, exp=int(time.time()) - 60), "expired"),
        (lambda: player_token("a", key=KEY, aud="other"), "not valid"),
        (lambda: player_token("a", key=KEY, iss="other"), "not valid"),
        (lambda: player_token("a", key=ec.generate_private_key(ec.SECP256R1()), kid=KID),
         "not valid"),
        (lambda: jwt.encode({"sub": "a", "iss": "tavla", "aud": "tavla-api", "iat": 1},
                            KEY, algorithm="ES256", headers={"kid": KID}), "exp"),
        (lambda: jwt.encode({"sub": "a"}, None, algorithm="none", headers={"kid": KID}),
         "ES256"),
        (lambda: jwt.encode({"sub": "a"}, "s" * 32, algorithm="HS256", headers={"kid": KID}),
         "ES256"),
        (lambda: player_token("", key=KEY), "names no account"),
        (lambda: jwt.encode({"sub": "a"}, KEY, algorithm="ES256"), "kid"),
        (lambda: player_token("a", key=ec.generate_private_key(ec.SECP256R1())), "unknown key"),
        (lambda: "not-a-jwt", "not a JWT"),
    ],
    ids=["expired", "audience", "issuer", "signature", "no-exp", "alg-none", "hs256",
         "empty-sub", "no-kid", "unknown-kid", "garbage"],
)
async def test_a_bad_access_token_is_refused_saying_why(token: Any, phrase: str) -> None:
    verifier = PlayerTokenVerifier(StaticKeys({KID: KEY.public_key()}))
    with pytest.raises(Unauthenticated, match=phrase):
        await verifier.subject(token())


async def test_a_verified_token_is_remembered_until_the_keys_change() -> None:
    keys = CountingKeys({KID: KEY.public_key()})
    verifier = PlayerTokenVerifier(keys)
    token = player_token("acct-1", key=KEY)
    for _ in range(5):
        assert await verifier.subject(token) == "acct-1"
    assert keys.lookups == 1
    keys.keys, keys.version = {}, 1  # the key is withdrawn from the JWKS
    with pytest.raises(Unauthenticated, match="unknown key"):
        await verifier.subject(token)


async def test_a_token_is_remembered_only_until_its_exp() -> None:
    clock = [time.time()]
    keys = CountingKeys({KID: KEY.public_key()})
    verifier = PlayerTokenVerifier(keys, now=lambda: clock[0])
    token = player_token("acct-1", key=KEY, ttl_seconds=60)
    await verifier.subject(token)
    await verifier.subject(token)
    assert keys.lookups == 1
    clock[0] += 61  # past its exp by the cache's clock: checked in full again
    await verifier.subject(token)
    assert keys.lookups == 2


async def test_the_cache_is_bounded() -> None:
    keys = CountingKeys({KID: KEY.public_key()})
    verifier = PlayerTokenVerifier(keys, cache_size=2)
    tokens = [player_token(f"acct-{i}", key=KEY) for i in range(3)]
    for token in tokens:
        await verifier.subject(token)
    await verifier.subject(tokens[0])  # evicted by the third: verified again
    assert keys.lookups == 4


def test_bearer_values() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token("Bearer ") is None
    assert bearer_token("") is None


# --- the JWKS cache --------------------------------------------------------------------------


class Accounts:
    """What GetJwks returns, and how often it is asked."""

    def __init__(self, *keys: ec.EllipticCurvePrivateKey) -> None:
        self.keys = list(keys)
        self.calls = 0
        self.down = False

    async def fetch(self) -> list[dict[str, str]]:
        self.calls += 1
        if self.down:
            raise ConnectionError("accounts is down")
        return [public_jwk(k.public_key(), key_id(k.public_key())) for k in self.keys]


async def test_a_flood_of_unknown_kids_fetches_once_per_interval() -> None:
    accounts = Accounts(KEY)
    now = [100.0]
    cache = JwksCache(accounts.fetch, min_refresh_seconds=10, monotonic=lambda: now[0])
    assert await cache.key(KID) is not None
    for i in range(1000):
        assert await cache.key(f"bogus-{i}") is None
    assert accounts.calls == 1
    now[0] += 10
    assert await cache.key("bogus-again") is None
    assert accounts.calls == 2


async def test_a_rotated_key_is_found_after_a_refresh_and_the_old_one_stays() -> None:
    accounts = Accounts(KEY)
    now = [0.0]
    cache = JwksCache(accounts.fetch, min_refresh_seconds=10, monotonic=lambda: now[0])
    assert await cache.key(KID) is not None
    version = cache.version
    new_key = ec.generate_private_key(ec.SECP256R1())
    accounts.keys = [new_key, KEY]  # accounts now signs with the new key, still serves the old
    now[0] += 10
    assert await cache.key(key_id(new_key.public_key())) is not None
    assert await cache.key(KID) is not None
    assert cache.version == version + 1


async def test_accounts_unreachable_before_any_fetch_is_unavailable_then_retried_soon() -> None:
    accounts = Accounts(KEY)
    accounts.down = True
    now = [0.0]
    cache = JwksCache(accounts.fetch, min_refresh_seconds=10, monotonic=lambda: now[0])
    with pytest.raises(Unavailable, match="retry"):
        await cache.key(KID)
    with pytest.raises(Unavailable):
        await cache.key(KID)
    assert accounts.calls == 1  # failures are rate-limited too
    accounts.down = False
    now[0] += 1.0  # a second after a failure, not the ten after a success
    assert await cache.key(KID) is not None
    assert accounts.calls == 2


async def test_a_failed_refresh_keeps_the_keys_already_known_and_retries_soon() -> None:
    accounts = Accounts(KEY)
    cache = JwksCache(accounts.fetch, refresh_seconds=300, min_refresh_seconds=10)
    await cache.refresh(scheduled=True)
    assert cache.next_delay() == 300
    accounts.down = True
    await cache.refresh(scheduled=True)
    assert await cache.key(KID) is not None
    assert cache.next_delay() == 1


async def test_a_service_is_ready_for_players_only_once_it_has_fetched_their_keys() -> None:
    accounts = Accounts(KEY)
    accounts.down = True
    cache = JwksCache(accounts.fetch, refresh_seconds=300, min_refresh_seconds=10)
    players = PlayerVerification(PlayerTokenVerifier(cache), cache)
    await cache.refresh(scheduled=True)
    assert not players.ready(), "it would refuse every player: not ready"
    accounts.down = False
    await cache.refresh(scheduled=True)
    assert players.ready()
    accounts.down = True
    await cache.refresh(scheduled=True)
    assert players.ready(), "the keys it holds still verify tokens while accounts is away"
    assert PlayerVerification().ready(), "a service without player methods needs no keys"


async def test_a_starting_service_checks_readiness_again_as_soon_as_the_keys_arrive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = asyncio.Event()
    runtime: Any = SimpleNamespace(settings=SimpleNamespace(readiness_interval_seconds=30.0))
    readiness = Readiness(runtime, cast(Any, None), [], keys_ready=keys.is_set)
    checks: list[bool] = []

    async def check_once() -> bool:
        checks.append(keys.is_set())
        return keys.is_set()

    monkeypatch.setattr(readiness, "check_once", check_once)
    running = asyncio.create_task(readiness.run())
    try:
        await asyncio.sleep(0.2)
        assert checks == [False]  # not ready: the keys are not fetched yet
        keys.set()
        async with asyncio.timeout(2):  # not the 30 s interval
            while len(checks) < 2:
                await asyncio.sleep(0.01)
        assert checks == [False, True]
        await asyncio.sleep(0.3)
        assert checks == [False, True], "with the keys held, the interval is waited whole"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


# --- service tokens --------------------------------------------------------------------------

GAME_KEY = ec.generate_private_key(ec.SECP256R1())
GAME = {"game": {key_id(GAME_KEY.public_key()): GAME_KEY.public_key()}}


def game_token(**claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": "game", "sub": "game", "aud": "wallet", "iat": now, "exp": now + 300}
    payload.update(claims)
    headers = {"kid": key_id(GAME_KEY.public_key())}
    return jwt.encode(payload, GAME_KEY, algorithm="ES256", headers=headers)


def test_a_minted_service_token_is_reused_until_near_expiry() -> None:
    now = [1_000_000.0]
    minter = ServiceTokenMinter("game", GAME_KEY, now=lambda: now[0])
    first = minter.token("wallet")
    assert minter.token("wallet") == first
    assert minter.token("analysis") != first
    now[0] += 300 - 59  # within the last minute of its life: a new one
    assert minter.token("wallet") != first


def test_a_service_token_names_its_caller() -> None:
    minter = ServiceTokenMinter("game", GAME_KEY)
    assert ServiceTokenVerifier("wallet", GAME).caller(minter.token("wallet")) == "game"


@pytest.mark.parametrize(
    ("token", "phrase"),
    [
        (lambda: game_token(aud="analysis"), "addressed to another service"),
        (lambda: game_token(iss="matchmaking", sub="matchmaking"), "not a service wallet knows"),
        (lambda: game_token(sub="wallet"), "sub must equal its iss"),
        (lambda: game_token(exp=int(time.time()) + 3600), "longer than 600"),
        (lambda: game_token(iat=int(time.time()) - 900, exp=int(time.time()) - 600), "expired"),
        (lambda: player_token("acct", key=KEY), "'tavla' is not a service"),
        (lambda: jwt.encode({"iss": "game"}, None, algorithm="none"), "ES256"),
    ],
    ids=["audience", "unknown-service", "sub", "lifetime", "expired", "player-token", "alg-none"],
)
def test_a_bad_service_token_is_refused_saying_why(token: Any, phrase: str) -> None:
    with pytest.raises(Unauthenticated, match=phrase):
        ServiceTokenVerifier("wallet", GAME).caller(token())


# --- who may call what -----------------------------------------------------------------------


def test_the_access_table_is_read_from_the_contracts() -> None:
    wallet = access_table(["tavla.wallet.v1.WalletService"])
    # As written in protos/tavla/wallet/v1/wallet.proto.
    assert wallet["/tavla.wallet.v1.WalletService/PlaceHold"] == Access(
        auth_pb2.ACCESS_SERVICE, frozenset({"matchmaking", "game", "tournaments"})
    )
    assert wallet["/tavla.wallet.v1.WalletService/GetBalances"].kind == auth_pb2.ACCESS_PLAYER
    accounts = access_table(["tavla.accounts.v1.AccountsService"])
    assert accounts["/tavla.accounts.v1.AccountsService/Login"].kind == auth_pb2.ACCESS_ANONYMOUS
    assert accounts["/tavla.accounts.v1.AccountsService/GetJwks"].kind == auth_pb2.ACCESS_ANONYMOUS


INTERNAL = Access(auth_pb2.ACCESS_SERVICE, frozenset({"game"}))
PLAYER = Access(auth_pb2.ACCESS_PLAYER)
AUTHENTICATOR = Authenticator(
    PlayerTokenVerifier(StaticKeys({KID: KEY.public_key()})), ServiceTokenVerifier("wallet", GAME)
)


async def test_each_kind_of_access_admits_its_own_credential() -> None:
    player = {"authorization": f"Bearer {player_token('acct-1', key=KEY)}"}
    service = {"x-tavla-service-token": game_token()}
    assert (await AUTHENTICATOR.caller("/m", PLAYER, player)).account == "acct-1"
    assert (await AUTHENTICATOR.caller("/m", INTERNAL, service)).service == "game"
    anonymous = await AUTHENTICATOR.caller("/m", Access(auth_pb2.ACCESS_ANONYMOUS), {})
    assert anonymous.account is None and anonymous.service is None


@pytest.mark.parametrize(
    ("access", "metadata", "error", "phrase"),
    [
        (INTERNAL, "player", PermissionDenied, "a player's access token cannot call it"),
        (INTERNAL, "none", Unauthenticated, "needs a service credential"),
        (Access(auth_pb2.ACCESS_SERVICE, frozenset({"matchmaking"})), "service",
         PermissionDenied, "'game' may not call"),
        (PLAYER, "service", Unauthenticated, "signed-in player"),
        (PLAYER, "forged-header", Unauthenticated, "signed-in player"),
        (Access(auth_pb2.ACCESS_UNSPECIFIED), "player", PermissionDenied, "declares no access"),
    ],
)
async def test_a_call_without_the_declared_credential_is_refused(
    access: Access, metadata: str, error: type[Exception], phrase: str
) -> None:
    sent = {
        "player": {"authorization": f"Bearer {player_token('acct-1', key=KEY)}"},
        "service": {"x-tavla-service-token": game_token()},
        "forged-header": {"x-tavla-account-id": "acct-1"},
        "none": {},
    }[metadata]
    with pytest.raises(error, match=phrase):
        await AUTHENTICATOR.caller("/tavla.x.v1.X/M", access, sent)


async def test_the_verified_player_carries_the_residence_the_token_was_signed_with() -> None:
    verifier = PlayerTokenVerifier(StaticKeys({KID: KEY.public_key()}))
    player = await verifier.player(player_token("acct-1", key=KEY, residence="US-NJ"))
    assert (player.account_id, player.residence) == ("acct-1", "US-NJ")
    assert (await verifier.player(player_token("acct-2", key=KEY))).residence == ""


STAFF = Access(auth_pb2.ACCESS_PLAYER, roles=frozenset({"compliance"}))


@pytest.mark.parametrize(
    "claims",
    [{}, {"roles": []}, {"roles": ["support"]}, {"roles": "compliance"}, {"roles": [1, None]}],
    ids=["no-claim", "empty", "other-role", "not-a-list", "not-strings"],
)
async def test_a_staff_method_refuses_a_token_without_its_role(claims: dict[str, Any]) -> None:
    player = {"authorization": f"Bearer {player_token('acct-1', key=KEY, **claims)}"}
    with pytest.raises(PermissionDenied, match="role compliance"):
        await AUTHENTICATOR.caller("/m", STAFF, player)


async def test_a_staff_method_admits_a_token_carrying_its_role() -> None:
    token = player_token("officer-1", key=KEY, roles=["support", "compliance"])
    caller = await AUTHENTICATOR.caller("/m", STAFF, {"authorization": f"Bearer {token}"})
    assert caller.account == "officer-1"
    # An ordinary player method needs no role at all.
    plain = player_token("acct-2", key=KEY)
    assert (await AUTHENTICATOR.caller("/m", PLAYER, {"authorization": f"Bearer {plain}"})).account


def test_the_access_table_reads_declared_roles() -> None:
    from tavla.antiabuse.v1 import antiabuse_pb2  # noqa: F401

    table = access_table(["tavla.antiabuse.v1.AntiAbuseService"])
    assert table["/tavla.antiabuse.v1.AntiAbuseService/ListAlerts"].roles == {"compliance"}
