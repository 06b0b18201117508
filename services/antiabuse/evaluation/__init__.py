"""The detectors' evaluation: a labelled population played through the real services
(``tavla abuse simulate``), scored against the alerts it raised (``tavla abuse eval``),
and the anti-abuse consumer's throughput (``tavla bench antiabuse``)."""
