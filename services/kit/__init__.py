"""The shared runtime every service stands on.

One place per concern: configuration (``config``), logging (``logging``),
metrics (``metrics``), the gRPC server (``server``), the database and unit of
work (``db``), the transactional outbox, relay and inbox (``events``), the
injectable clock (``clock``) and domain errors mapped to gRPC status
(``errors``). The local platform launcher lives in ``devstack``.
"""
