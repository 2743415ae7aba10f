"""Contract tests a provider runs against its own implementation: generated ``contract_tests.py`` modules call
:func:`verify_provider` with the provider's typed handler (docs/codegen.md#using-the-stubs).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._binding import ContractBinding, PayloadInvalid
from ._mockdata import InstanceGenerator
from ._transport import Handler

__all__ = ["ContractViolation", "VerifyReport", "verify_provider"]


@dataclass
class VerifyReport:
    contract: str
    calls: int = 0
    failures: list[str] = field(default_factory=list)


class ContractViolation(AssertionError):
    """The provider's implementation answered outside its contract (an assertion: it fails a test)."""

    def __init__(self, report: VerifyReport) -> None:
        lines = "\n".join(f"  - {f}" for f in report.failures)
        super().__init__(
            f"{report.contract}: {len(report.failures)} of {report.calls} calls broke the contract:\n{lines}"
        )
        self.report = report


async def verify_provider(
    contract: ContractBinding, handlers: Mapping[str, Handler], *, seed: int = 0, examples: int = 10
) -> VerifyReport:
    """Call every operation ``examples`` times with generated requests; raise :class:`ContractViolation`
    listing each reply that is not valid under its schema, or each handler that raised, or each operation
    that has no handler."""
    report = VerifyReport(contract.id)
    for operation in sorted(contract.operations):
        input_schema, output_schema = contract.operations[operation]
        handler = handlers.get(operation)
        if handler is None:
            report.failures.append(f"{operation}: no handler")
            continue
        generator = InstanceGenerator(contract.schemas[input_schema], label=f"{contract.id} {input_schema}")
        for n in range(examples):
            request = generator.instance(seed=zlib.crc32(f"{seed}:{operation}:{n}".encode()))
            report.calls += 1
            try:
                reply = await handler(request)
                contract.check(output_schema, reply, moving="outgoing")
            except PayloadInvalid as exc:
                report.failures.append(f"{operation}: request {request!r}: {exc.message}")
            except Exception as exc:  # the implementation's own failure is what this test reports
                report.failures.append(f"{operation}: request {request!r}: raised {type(exc).__name__}: {exc}")
    if report.failures:
        raise ContractViolation(report)
    return report
