"""The detectors, one module per restricted activity, each run by the facts consumer.

A detector reads facts (:class:`services.antiabuse.store.Facts`), asks its pure
domain module (:mod:`services.antiabuse.domain`) for a finding, and raises it on
the common alert path (:func:`services.antiabuse.alerting.raise_alert`). Every
detector has the same shape: a ``domain/<name>.py`` and a ``detectors/<name>.py``,
triggered from :mod:`services.antiabuse.consumers`: ``play.py`` runs assistance and
consulting during play on the analysis service's ``MatchAnalysed``; rating
manipulation, deliberate disconnects and the play half of chip dumping run through
:mod:`services.antiabuse.play_handlers`.
"""
