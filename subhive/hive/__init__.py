"""The seed of the sub-hive runtime: what a knowledge source is, before any runtime exists.

A sub-hive's experts are **knowledge sources**: each declares the blackboard keys that wake it up
(``triggers``, NATS key patterns), how urgent it is (``priority``) and what it writes in reaction
(``activate``). The runtime (a JetStream key-value bucket per hive, watches on the trigger patterns and a
controller) comes with a later release; this package only fixes the shapes it will call, so the
knowledge sources that ``subhive new`` scaffolds are real code from day one.

    >>> from subhive.hive import Entry, Write, key_matches
    >>> key_matches("tasks.*", "tasks.t1"), key_matches("tasks.*", "tasks.t1.notes")
    (True, False)

Keep the decision of a knowledge source pure (entry in, writes out) and ``activate`` a thin shell around
it: the pure part is what tests exercise, without a bus or a fake of one.
"""

from ._knowledge import Blackboard, Entry, KnowledgeSource, Write, check_key_pattern, key_matches

__all__ = ["Blackboard", "Entry", "KnowledgeSource", "Write", "check_key_pattern", "key_matches"]
