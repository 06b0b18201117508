"""Events: the transactional outbox, the relay that publishes it to Kafka, and
consumers that apply each event exactly once by recording its id in an inbox
table in the same transaction as its effect.

Wire format (ARCHITECTURE.md): the value is a protobuf message; CloudEvents
attributes travel in Kafka headers; ``ce_type`` is the message's full protobuf
name and ``ce_id`` is the consumers' dedupe key. The relay signs every record
with its service's key (``ce_signature``, :mod:`.signing`) and consumers apply
only events signed by the topic's owner. What a consumer cannot apply is parked
(:mod:`.consumer`, ``tavla events parked`` in :mod:`.parked`), never a reason to stop.
"""
