"""``tavla tournament create`` as a process: an operator creates a tournament with the ops
key; the same request again answers the same one; rules the service cannot run are
refused with its message; a freeroll's pool is held by the house once; a bad file or a
missing key never reaches the service."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from google.protobuf import json_format

from tests.integration.tournaments.conftest import Venue
from tests.support.identity import SERVICE_KEYS
from tests.support.tournaments import scalar, sit_and_go


async def tavla(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "services.cli", "tournament", "create", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_an_operator_creates_a_tournament(venue: Venue, tmp_path: Path) -> None:
    request = tmp_path / "sit-and-go.json"
    request.write_text(json_format.MessageToJson(sit_and_go(4, buy_in=500, fee=25)))
    ops = ["--address", venue.tournaments.address,
           "--key-file", str(SERVICE_KEYS.private_key_file("ops"))]  # fmt: skip
    first = await tavla("--request", str(request), *ops)
    assert first.returncode == 0, first.stderr
    created = json.loads(first.stdout)
    assert created["status"] == "STATUS_REGISTERING" and len(created["seedCommitment"]) == 64
    again = await tavla("--request", str(request), *ops)
    assert json.loads(again.stdout)["tournamentId"] == created["tournamentId"]

    impossible = tmp_path / "six-seats.json"
    impossible.write_text(json_format.MessageToJson(sit_and_go(6, buy_in=500, fee=25)))
    refused = await tavla("--request", str(impossible), *ops)
    assert refused.returncode == 1
    assert refused.stderr.startswith("tavla tournament create: INVALID_ARGUMENT:")
    assert "seats" in refused.stderr

    as_game = await tavla("--request", str(request), "--address", venue.tournaments.address,
                          "--key-file", str(SERVICE_KEYS.private_key_file("game")))
    assert as_game.returncode == 1 and "UNAUTHENTICATED" in as_game.stderr  # not the ops key


async def test_a_bad_file_or_no_key_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rules": {"seats": 8}}')
    key = str(SERVICE_KEYS.private_key_file("ops"))
    run = await tavla("--request", str(bad), "--address", "127.0.0.1:1", "--key-file", key)
    assert run.returncode == 2 and "is not a CreateTournament request" in run.stderr
    good = tmp_path / "good.json"
    good.write_text(json_format.MessageToJson(sit_and_go(4, buy_in=500, fee=25)))
    run = await tavla("--request", str(good), "--address", "127.0.0.1:1",
                      "--key-file", str(tmp_path / "missing.pem"))
    assert run.returncode == 2 and "--key-file" in run.stderr


async def test_an_operator_creates_a_freerolls_pool_held_once(
    venue: Venue, tmp_path: Path
) -> None:
    """The README's freeroll: no buy-in, no fee, 50.00 added by the house; the kind follows,
    and the house's money is held once however often the operator runs the command."""
    request = tmp_path / "freeroll.json"
    request.write_text(json.dumps({
        "name": "Freeroll 4", "idempotencyKey": f"freeroll-{tmp_path.name}",
        "rules": {"sitAndGo": {"seats": 4}, "matchLengths": [1], "clock": "blitz",
                  "currency": "USD", "addedPrize": "5000", "prizeTable": "standard"},
    }))  # fmt: skip
    ops = ["--address", venue.tournaments.address,
           "--key-file", str(SERVICE_KEYS.private_key_file("ops"))]  # fmt: skip
    runs = [await tavla("--request", str(request), *ops) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    created = json.loads(runs[0].stdout)
    assert json.loads(runs[1].stdout)["tournamentId"] == created["tournamentId"]
    assert created["rules"]["kind"] == "KIND_FREEROLL"
    # 50.00 at 70/30: 35.00 and 15.00.
    assert [p["amount"]["minorUnits"] for p in created["prizePlaces"]] == ["3500", "1500"]
    held = await scalar(
        venue.wallet_url,
        "SELECT count(*) FROM holds WHERE table_id = :t AND player_id = '~house' "
        "AND amount = 5000 AND status = 'open'",
        t=created["tournamentId"],
    )
    assert held == 1
