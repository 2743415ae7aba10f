"""Self-repair: a failure class a hive saw twice becomes a repair proposal at the root (docs/bus.md#self-repair)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ._transport import Failure

if TYPE_CHECKING:
    from ..root_hive import Approval, RootClient

__all__ = ["propose_repair", "report_to_root"]


async def propose_repair(root: RootClient, failure: Failure) -> Approval:
    """Send one repeated failure to the root as a repair proposal; returns the (new or counted) approval."""
    return await root.propose_repair(
        code=failure.repair_code,
        message=failure.message,
        contract=failure.contract,
        operation=failure.member,
        subject=failure.subject,
        count=failure.count,
        sample=failure.sample,
    )


def report_to_root(root: RootClient) -> Callable[[Failure], Awaitable[None]]:
    """An ``on_repeated_failure`` callback that sends each repeated failure to the root as a repair proposal
    (with the hive's own token: a hive proposes repairs for itself only). A repeat while the proposal is
    pending adds to its count instead of opening another.

    >>> async with RootClient(address, token) as root:  # doctest: +SKIP
    ...     transport = await NatsTransport.connect(endpoint, "web", on_repeated_failure=report_to_root(root))
    """

    async def report(failure: Failure) -> None:
        await propose_repair(root, failure)

    return report
