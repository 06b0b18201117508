"""A service that cannot bind its port says so in the words its launchers look for."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from services.kit.server import _listen


def test_a_port_held_by_another_socket_fails_as_already_in_use() -> None:
    async def bind_taken_port(port: int) -> None:
        server = grpc.aio.server()
        try:
            _listen(server, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    with socket.socket() as holder:  # no SO_REUSEPORT: nobody else may bind it
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(OSError, match=f"127.0.0.1:{port}: the port is already in use"):
            asyncio.run(bind_taken_port(port))


def test_a_free_port_is_bound() -> None:
    async def bind_free_port() -> int:
        server = grpc.aio.server()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        _listen(server, f"127.0.0.1:{port}")
        await server.start()
        await server.stop(None)
        return port

    assert asyncio.run(bind_free_port()) > 0
