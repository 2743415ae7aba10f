"""Language-model agents in hives: a stateless, prefix-stable loop over any OpenAI-compatible endpoint.

An agent is a knowledge source declared in its hive's manifest (docs/agents.md). Its loop sends the whole
conversation with every request, each request an exact extension of the previous one until a compaction; its
tools reach only what its hive may touch. :class:`ScriptedServer` is an OpenAI-compatible server driven by a
script, for tests and demos without a paid model.
"""

from ._scripted import RecordedRequest, ScriptedServer, Step, ToolCallStep, estimate_tokens

__all__ = [
    "RecordedRequest",
    "ScriptedServer",
    "Step",
    "ToolCallStep",
    "estimate_tokens",
]
