"""The detectors, one module per restricted activity, each run by the facts consumer.

A detector reads facts (:class:`services.antiabuse.store.Facts`), asks its pure
domain module (:mod:`services.antiabuse.domain`) for a finding, and raises it on
the common alert path (:func:`services.antiabuse.alerting.raise_alert`). Detectors
to come (intentional losing, deliberate disconnects) follow the same shape: a
``domain/<name>.py`` and a ``detectors/<name>.py``, triggered from
:mod:`services.antiabuse.consumers`. ``play.py`` runs two on the analysis
service's ``MatchAnalysed``: assistance and consulting during play.
"""
