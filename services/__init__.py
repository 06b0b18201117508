"""Tavla's services. Each sub-package owns one area; ARCHITECTURE.md gives the shape they share.

Importing the package turns gRPC's fork handlers off (``GRPC_ENABLE_FORK_SUPPORT``,
read once when grpc is first imported, so it is set here, before any of ours can
import it). The handlers exist for a child that goes on using gRPC after ``fork()``;
no process of ours does: every child execs (the outbox relay, the components
``tavla dev`` supervises, the analysis pool's spawned workers). With them on,
grpcio 1.80 and later restarts its poller in a child forked with ``preexec_fn``,
which then finds its epoll descriptor closed and aborts before ``exec``
(grpc/grpc#43055): an Envoy or PostgreSQL that "exited with status -6 while
starting". An operator may still set the variable; ours is only the default.
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
