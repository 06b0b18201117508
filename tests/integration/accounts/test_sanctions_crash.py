"""An accounts process killed at the sanctions consumer's worst moment terminates once.

Real ``tavla serve accounts`` processes on the real PostgreSQL and broker. The
fail point ``accounts.sanctions.after_db_commit`` SIGKILLs the process right
after a termination is committed (inbox row, closed account, blocklist,
AccountTerminated in the outbox) and before its Kafka offset is: the next
process gets the event again and must change and publish nothing more.
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.antiabuse.v1 import events_pb2
from tests.support.compliance import VERDICTS, sanctions_consumed
from tests.support.identity import PLAYER_KEY_FILE
from tests.support.kafka import committed_offsets, publish
from tests.support.processes import ServeProcesses, service_environment
from tests.support.ratings import query
from tests.support.services import new_database

KILL_AFTER_COMMIT = "accounts.sanctions.after_db_commit=kill"
GROUP = "accounts.sanctions"
PASSWORD = "correct horse battery"


async def test_killed_between_commit_and_offset_commit_terminates_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses
) -> None:
    url = postgres_server.url(new_database(postgres_server, "accounts_crash"))
    bootstrap = kafka_broker.bootstrap
    environment = service_environment(
        "accounts", url, bootstrap, accounts_address="127.0.0.1:1",
        TAVLA_JWT_PRIVATE_KEY_FILE=str(PLAYER_KEY_FILE),
    )
    first = await serve.start("accounts", environment)
    channel = first.channel()
    email = f"ann-{uuid.uuid4().hex[:8]}@example.com"
    stub = accounts_pb2_grpc.AccountsServiceStub(channel)
    ann = await stub.Register(accounts_pb2.RegisterRequest(
        email=email, password=PASSWORD, display_name=f"p{uuid.uuid4().hex[:10]}",
        residence="MT", date_of_birth="1990-04-21"))
    # Whatever earlier tests left on the topic is consumed first: the next event is ours.
    await sanctions_consumed(bootstrap, [GROUP])
    await channel.close()
    await first.kill()

    sanction = events_pb2.AccountSanctioned(
        sanction_id=str(uuid.uuid4()), case_id=str(uuid.uuid4()), account_id=ann.account_id,
        kind=events_pb2.SANCTION_KIND_TERMINATE_ACCOUNT, reason="test",
    )
    envelope = Envelope.wrap(topic=VERDICTS, key=ann.account_id, message=sanction,
                             source="antiabuse", now=ann.created_at.ToDatetime())
    [(partition, offset)] = await publish(bootstrap, [envelope])
    armed = serve.launch("accounts", {**environment, "TAVLA_FAILPOINTS": KILL_AFTER_COMMIT})
    await armed.wait_killed(timeout=120)

    applied = await query(url, "SELECT sanction_id FROM applied_sanctions")
    assert [row["sanction_id"] for row in applied] == [sanction.sanction_id]
    committed = await committed_offsets(bootstrap, GROUP, VERDICTS)
    assert committed.get(partition, -1) <= offset, "the offset was committed before the kill"

    second = await serve.start("accounts", environment)
    await sanctions_consumed(bootstrap, [GROUP])
    published = await query(
        url, "SELECT key FROM outbox WHERE ce_type = 'tavla.accounts.v1.AccountTerminated'")
    assert [row["key"] for row in published] == [ann.account_id]
    blocked = await query(url, "SELECT kind, value FROM blocked_identifiers")
    assert [(r["kind"], r["value"]) for r in blocked] == [("email", email)]
    channel = second.channel()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await accounts_pb2_grpc.AccountsServiceStub(channel).Login(
            accounts_pb2.LoginRequest(email=email, password=PASSWORD))
    await channel.close()
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
