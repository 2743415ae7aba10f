"""Sub-hive ui's own code: its knowledge sources (knowledge.py) and what they share."""
