"""What verifying identities costs per call (`make bench`): CPU time, measured in-process.

A full ES256 verification of an access token or a service token, against a
token the service has verified before (remembered until its ``exp``). Prints
the figures; asserts only that remembering is what makes the common case cheap.
"""

from __future__ import annotations

import asyncio
import time

from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.keys import key_id
from services.kit.player_tokens import PlayerTokenVerifier, StaticKeys
from services.kit.service_tokens import ServiceTokenMinter, ServiceTokenVerifier
from tests.support.identity import player_token

CALLS = 2000


def _cpu_ms_per_call(started: float, calls: int) -> float:
    return (time.process_time() - started) * 1000 / calls


def test_token_verification_costs() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    verifier = PlayerTokenVerifier(StaticKeys({key_id(key.public_key()): key.public_key()}))
    tokens = [player_token(f"acct-{i}", key=key) for i in range(CALLS)]

    async def verify_all() -> None:
        for token in tokens:
            await verifier.subject(token)

    started = time.process_time()
    asyncio.run(verify_all())
    full = _cpu_ms_per_call(started, CALLS)
    started = time.process_time()
    for _ in range(10):
        asyncio.run(verify_all())
    remembered = _cpu_ms_per_call(started, 10 * CALLS)

    game_key = ec.generate_private_key(ec.SECP256R1())
    wallet = ServiceTokenVerifier(
        "wallet", {"game": {key_id(game_key.public_key()): game_key.public_key()}}
    )
    service_tokens = [ServiceTokenMinter("game", game_key).token("wallet") for _ in range(500)]
    started = time.process_time()
    for token in service_tokens:
        wallet.caller(token)
    service_full = _cpu_ms_per_call(started, len(service_tokens))

    print(
        f"\naccess token: {full:.3f} ms CPU to verify, {remembered:.4f} ms once remembered; "
        f"service token: {service_full:.3f} ms CPU to verify"
    )
    assert remembered * 10 < full
