"""A process serving and calling gRPC can fork children that exec, and none dies first.

grpcio 1.80 and later, with its fork handlers on, restarts its poller in a child
forked with ``preexec_fn`` (as the supervisor forks every component), and the child
aborts on a closed epoll descriptor before it execs. Importing ``services`` turns
the handlers off; the check runs in a fresh interpreter, where grpc is not yet loaded.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILDREN = 120
REPO_ROOT = Path(__file__).resolve().parents[3]

_PROGRAM = textwrap.dedent(
    f"""
    import asyncio, subprocess
    import services  # before grpc, as every process of ours imports it
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_health.v1.health import aio as health_aio

    async def main():
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(health_aio.HealthServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stub = health_pb2_grpc.HealthStub(grpc.aio.insecure_channel(f"127.0.0.1:{{port}}"))
        calling = True

        async def call():
            while calling:
                await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)

        callers = [asyncio.create_task(call()) for _ in range(4)]
        failed = 0
        for _ in range({CHILDREN}):
            child = subprocess.Popen(["true"], preexec_fn=lambda: None, start_new_session=True)
            failed += child.wait() != 0
            await asyncio.sleep(0)
        calling = False
        await asyncio.gather(*callers)
        print(failed)

    asyncio.run(main())
    """
)


def test_children_forked_beside_live_grpc_calls_all_reach_exec() -> None:
    env = {"PATH": "/usr/bin:/bin"}  # no GRPC_ENABLE_FORK_SUPPORT: the package's default decides
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "0", f"children that died before exec: {done.stdout}"
