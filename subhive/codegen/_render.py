"""The Python of a contract's stub package: handler interface, client, mock provider, contract tests.
Text built from the contract, with the generated-code header; deterministic (same inputs, same bytes: what
makes incremental runs and ``--check`` possible) and lint-clean by construction (ruff, isort order, 120 columns).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..contract import Contract
from ._plan import ContractStub, class_prefix

__all__ = ["identifier", "member_clashes", "render_package"]

WIDTH = 120  # the generated code's line limit, the project's own


def identifier(name: str) -> str:
    """An operation or event name as a Python method name: ``identifier("get-item")`` is 'get_item'."""
    text = re.sub(r"\W", "_", name)
    if text[:1].isdigit():
        text = "_" + text
    # Hard keywords only: soft ones (``match``, ``type``) are valid names, and their list changes between
    # Python versions, which would make generated code depend on the interpreter that ran codegen.
    return text + "_" if keyword.iskeyword(text) else text


def member_clashes(contract: Contract) -> list[str]:
    """Names that would collide in a generated class, one sentence each (empty when there are none).

    Operation and event names become methods (``class`` becomes ``class_``), beside the helpers the classes
    already have: ``on_<event>`` on the client, ``pin_<operation>``, ``sample_<event>`` and ``provider`` on
    the mock. Two of them with one name would silently replace each other, so codegen refuses instead.
    """
    owners: dict[str, dict[str, str]] = {"client": {}, "mock": {}, "events": {}}

    def claim(cls: str, member: str, owner: str) -> None:
        other = owners[cls].setdefault(member, owner)
        if other != owner:
            clashes.append(f"{other} and {owner} both become {cls} member {member!r}")

    clashes: list[str] = []
    owners["mock"]["provider"] = "the mock's provider attribute"
    for op in sorted(contract.operations):
        fn = identifier(op)
        for cls in ("client", "mock"):
            claim(cls, fn, f"operation {op!r}")
        claim("mock", f"pin_{fn}", f"the pin method of operation {op!r}")
    for event in sorted(contract.events):
        fn = identifier(event)
        claim("events", fn, f"event {event!r}")
        claim("client", f"on_{fn}", f"the subscribe method of event {event!r}")
        claim("mock", f"sample_{fn}", f"the sample method of event {event!r}")
    return sorted(set(clashes))


# --- text helpers -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """``head`` + a bracketed, comma-separated list of ``items`` + ``tail``: a call, a signature, a subscript,
    a list, a dict or a parenthesised import. Printed on one line when it fits, otherwise one item per line
    with a trailing comma (the black and isort shape, which ruff accepts), recursively."""

    head: str
    items: tuple[_Expr, ...]
    tail: str = ""
    brackets: str = "()"


_Expr = str | _Group


def _group(head: str, items: Iterable[_Expr], tail: str = "", brackets: str = "()") -> _Group:
    return _Group(head, tuple(items), tail, brackets)


def _flat(expr: _Expr) -> str:
    if isinstance(expr, str):
        return expr
    inner = ", ".join(_flat(item) for item in expr.items)
    return f"{expr.head}{expr.brackets[0]}{inner}{expr.brackets[1]}{expr.tail}"


def _lines(expr: _Expr, indent: str) -> str:
    """``expr`` as lines at ``indent``, each line within the limit wherever brackets allow it."""
    flat = indent + _flat(expr)
    if isinstance(expr, str) or len(flat) <= WIDTH:
        return flat + "\n"
    inner = indent + "    "
    items = "".join(_lines(item, inner)[:-1] + ",\n" for item in expr.items)
    return f"{indent}{expr.head}{expr.brackets[0]}\n{items}{indent}{expr.brackets[1]}{expr.tail}\n"


def _member_order(name: str) -> tuple[int, str]:
    """isort's order-by-type within one ``from`` import: CONSTANTS, then Classes, then functions."""
    if name.isupper() and len(name) > 1:
        return 0, name
    return (1 if name[:1].isupper() else 2), name


def _import_line(module: str, names: Iterable[str]) -> str:
    members = sorted(set(names), key=_member_order)
    line = f"from {module} import {', '.join(members)}\n"
    if len(line) <= WIDTH + 1:
        return line
    return _lines(_group(f"from {module} import ", members), "")


def _imports(stdlib: Mapping[str, Iterable[str]], runtime: Iterable[str], local: Mapping[str, Iterable[str]]) -> str:
    """The import block of a stub module, in isort's sections: ``__future__``, standard library, subhive,
    the package itself. ``stdlib`` maps a module to names (an empty list means ``import module``)."""
    plain = sorted(m for m, names in stdlib.items() if not list(names))
    froms = sorted((m, list(names)) for m, names in stdlib.items() if list(names))
    blocks = ["from __future__ import annotations\n"]
    std = "".join(f"import {m}\n" for m in plain) + "".join(_import_line(m, n) for m, n in froms)
    if std:
        blocks.append(std)
    runtime = list(runtime)
    if runtime:
        blocks.append(_import_line("subhive.runtime", runtime))
    # isort orders ``from . import x`` before ``from ._a import y`` before ``from .b import z``.
    ordered = sorted(local.items(), key=lambda item: (item[0] != ".", item[0]))
    blocks.append("".join(_import_line(m, names) for m, names in ordered))
    return "\n".join(blocks)


def _def(indent: str, head: str, params: Iterable[_Expr], returns: str) -> str:
    return _lines(_group(head, params, f" -> {returns}:"), indent)


def _doc(text: str, indent: str) -> str:
    """A one-paragraph docstring, wrapped at the limit."""
    body = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"') or "No description."
    if len(indent) + len(body) + 6 <= WIDTH:
        return f'{indent}"""{body}"""\n'
    lines: list[str] = []
    current = ""
    for word in body.split(" "):
        if current and len(indent) + len(current) + len(word) + 4 > WIDTH:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    return f'{indent}"""' + f"\n{indent}".join(lines) + f'\n{indent}"""\n'


def _str(text: str) -> str:
    """A string literal in the double quotes the project's style uses."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _model(classes: Mapping[str, str], key: str) -> str:
    # Models are used as ``models.X``: a schema named ``Transport`` or ``Any`` cannot shadow what stubs import.
    return f"models.{classes[key]}"


def _io(classes: Mapping[str, str], operation: str) -> tuple[str, str]:
    return _model(classes, f"operations.{operation}.input"), _model(classes, f"operations.{operation}.output")


# --- modules ------------------------------------------------------------------------------------------------


def render_package(stub: ContractStub, contract: Contract, classes: Mapping[str, str], header: str) -> dict[str, str]:
    """Files of the package (name -> text), ``models.py`` and ``contract.json`` excepted."""
    prefix = class_prefix(contract.name)
    cname = identifier(contract.name)
    files = {
        "_contract.py": _contract_module(header),
        "handler.py": _handler_module(contract, classes, prefix, header),
    }
    exports = {"handler": [f"{prefix}Handler", f"{prefix}Events", f"serve_{cname}", f"{cname}_handlers"]}
    if stub.role == "consumes":
        files["client.py"] = _client_module(contract, classes, prefix, header)
        files["mock.py"] = _mock_module(contract, classes, prefix, header)
        exports |= {"client": [f"{prefix}Client"], "mock": [f"{prefix}Mock"]}
    else:
        files["contract_tests.py"] = _tests_module(contract, prefix, header)
        exports["contract_tests"] = [f"verify_{cname}"]
    files["__init__.py"] = _init_module(stub, contract, exports, header)
    return files


def _init_module(stub: ContractStub, contract: Contract, exports: dict[str, list[str]], header: str) -> str:
    role = "consumed" if stub.role == "consumes" else "provided"
    lines = "".join(_import_line(f".{module}", names) for module, names in sorted(exports.items()))
    names = sorted(["CONTRACT", *(n for group in exports.values() for n in group)])
    listed = _lines(_group("__all__ = ", [_str(n) for n in names], brackets="[]"), "")
    doc = _doc(f"Contract {contract.name} {contract.version} ({role} here; provider: {contract.provider}).", "")
    return f"{header}{doc}\nfrom ._contract import CONTRACT\n{lines}\n{listed}"


def _contract_module(header: str) -> str:
    return (
        f'{header}"""The contract binding: schemas and compiled validators (from contract.json)."""\n\n'
        "from pathlib import Path\n\nfrom subhive.runtime import ContractBinding\n\n"
        'CONTRACT = ContractBinding.load(Path(__file__).with_name("contract.json"))\n'
    )


def _handler_module(contract: Contract, classes: Mapping[str, str], prefix: str, header: str) -> str:
    cname = identifier(contract.name)
    major = contract.version.line
    methods, table, emitters = [], [], []
    for op in sorted(contract.operations.values(), key=lambda o: o.name):
        fn = identifier(op.name)
        inp, out = _io(classes, op.name)
        methods.append(
            "    @abc.abstractmethod\n"
            + _def("    ", f"async def {fn}", ["self", f"request: {inp}"], out)
            + _doc(op.description, "        ")
        )
        table.append(_group(f"{_str(op.name)}: typed_handler", [f"handler.{fn}", inp]))
    for event in sorted(contract.events.values(), key=lambda e: e.name):
        cls = _model(classes, f"events.{event.name}.payload")
        emitters.append(
            _def("    ", f"async def {identifier(event.name)}", ["self", f"payload: {cls}"], "None")
            + _doc(event.description, "        ")
            + _lines(
                _group("await self._transport.publish", ["CONTRACT", _str(event.name), "to_payload(payload)"]),
                "        ",
            )
        )
    runtime = ["Handler", "Subscription", "Transport"]
    runtime += ["typed_handler"] if table else []
    runtime += ["to_payload"] if emitters else []
    local = {"._contract": ["CONTRACT"]}
    if methods or emitters:
        local["."] = ["models"]
    body = "\n".join(methods) if methods else "    pass\n"
    emit = "".join("\n" + e for e in emitters)
    doc = _doc(f"Provide {contract.name} v{major}: implement {prefix}Handler, serve it, emit events.", "")
    return (
        f"{header}{doc}\n{_imports({'abc': []}, runtime, local)}\n\n"
        f"class {prefix}Handler(abc.ABC):\n"
        f"{_doc(f'Implement one method per operation of {contract.name} {contract.version}.', '    ')}\n{body}\n\n"
        + _def("", f"def {cname}_handlers", [f"handler: {prefix}Handler"], "dict[str, Handler]")
        + '    """The payload-level handlers of every operation, for a transport or the contract tests."""\n'
        + _lines(_group("return ", table, brackets="{}"), "    ")
        + "\n\n"
        + _def("", f"async def serve_{cname}", [f"handler: {prefix}Handler", "transport: Transport"], "Subscription")
        + _doc(f"Serve every operation of {contract.name} v{major} with ``handler``.", "    ")
        + f"    return await transport.serve(CONTRACT, {cname}_handlers(handler))\n\n\n"
        f"class {prefix}Events:\n"
        f"{_doc(f'Emit the events of {contract.name} v{major}.', '    ')}\n"
        "    def __init__(self, transport: Transport) -> None:\n        self._transport = transport\n"
        f"{emit}"
    )


def _client_module(contract: Contract, classes: Mapping[str, str], prefix: str, header: str) -> str:
    methods = []
    for op in sorted(contract.operations.values(), key=lambda o: o.name):
        inp, out = _io(classes, op.name)
        methods.append(
            _def("    ", f"async def {identifier(op.name)}", ["self", f"request: {inp}"], out)
            + _doc(op.description, "        ")
            + _lines(
                _group("reply = await self._transport.request", ["CONTRACT", _str(op.name), "to_payload(request)"]),
                "        ",
            )
            + _lines(_group(f"return {out}.model_validate", ["reply"]), "        ")
        )
    for event in sorted(contract.events.values(), key=lambda e: e.name):
        cls = _model(classes, f"events.{event.name}.payload")
        methods.append(
            _def(
                "    ",
                f"async def on_{identifier(event.name)}",
                ["self", _group("callback: OnEvent", [cls], brackets="[]")],
                "Subscription",
            )
            + _doc(event.description, "        ")
            + _lines(
                _group(
                    "return await self._transport.subscribe",
                    ["CONTRACT", _str(event.name), _group("typed_callback", ["callback", cls])],
                ),
                "        ",
            )
        )
    runtime = ["Transport"]
    runtime += ["to_payload"] if contract.operations else []
    runtime += ["OnEvent", "Subscription", "typed_callback"] if contract.events else []
    local = {"._contract": ["CONTRACT"]}
    if methods:
        local["."] = ["models"]
    doc = _doc(f"Call {contract.name} v{contract.version.line} (provided by {contract.provider}).", "")
    class_doc = _doc(
        f"One method per operation of {contract.name} {contract.version}; ``on_<event>`` subscribes.", "    "
    )
    return (
        f"{header}{doc}\n{_imports({}, runtime, local)}\n\n"
        f"class {prefix}Client:\n{class_doc}"
        "\n    def __init__(self, transport: Transport) -> None:\n        self._transport = transport\n"
        + "".join("\n" + m for m in methods)
    )


def _mock_module(contract: Contract, classes: Mapping[str, str], prefix: str, header: str) -> str:
    methods = []
    for op in sorted(contract.operations.values(), key=lambda o: o.name):
        fn = identifier(op.name)
        inp, out = _io(classes, op.name)
        methods.append(
            _def("    ", f"def pin_{fn}", ["self", _group("answer: PinnedAnswer", [out, inp], brackets="[]")], "None")
            + _doc(f"Answer {op.name} with ``answer`` (or ``answer(request)``) from now on.", "        ")
            + _lines(_group("self.provider.pin_model", [_str(op.name), "answer", inp]), "        ")
            + "\n"
            + _def("    ", f"async def {fn}", ["self", f"request: {inp}"], out)
            + _lines(_group("return self.provider.answer_model", [_str(op.name), "request", out]), "        ")
        )
    for event in sorted(contract.events.values(), key=lambda e: e.name):
        cls = _model(classes, f"events.{event.name}.payload")
        methods.append(
            _def("    ", f"def sample_{identifier(event.name)}", ["self", "n: int = 0"], cls)
            + _doc(f"The n-th generated {event.name} payload (schema-valid, deterministic by seed).", "        ")
            + _lines(_group("return self.provider.event_model", [_str(event.name), "n", cls]), "        ")
        )
    runtime = ["MockProvider", *(["PinnedAnswer"] if contract.operations else [])]
    local = {"._contract": ["CONTRACT"], ".handler": [f"{prefix}Handler"]}
    if methods:
        local["."] = ["models"]
    doc = _doc(
        f"A mock provider of {contract.name} v{contract.version.line}: schema-valid answers, deterministic by seed.",
        "",
    )
    class_doc = _doc(
        f"Stands in for {contract.provider}: serve it with ``serve_{identifier(contract.name)}``; "
        "pin answers with ``pin_<operation>``.",
        "    ",
    )
    return (
        f"{header}{doc}\n{_imports({}, runtime, local)}\n\n"
        f"class {prefix}Mock({prefix}Handler):\n{class_doc}\n"
        "    def __init__(self, seed: int = 0) -> None:\n"
        "        self.provider = MockProvider(CONTRACT, seed=seed)\n" + "".join("\n" + m for m in methods)
    )


def _tests_module(contract: Contract, prefix: str, header: str) -> str:
    cname = identifier(contract.name)
    return (
        f'{header}"""Contract tests of {contract.name} v{contract.version.line}: run them against your '
        "implementation.\n\n"
        f"    async def test_contract() -> None:\n        await verify_{cname}(MyHandler())\n"
        '"""\n\n'
        + _imports(
            {},
            ["VerifyReport", "verify_provider"],
            {"._contract": ["CONTRACT"], ".handler": [f"{prefix}Handler", f"{cname}_handlers"]},
        )
        + "\n\n"
        + _def(
            "",
            f"async def verify_{cname}",
            [f"handler: {prefix}Handler", "*", "seed: int = 0", "examples: int = 10"],
            "VerifyReport",
        )
        + '    """Call every operation with generated schema-valid requests and check every reply against its '
        'schema;\n    raises ContractViolation listing what broke the contract."""\n'
        + _lines(
            _group(
                "return await verify_provider",
                ["CONTRACT", f"{cname}_handlers(handler)", "seed=seed", "examples=examples"],
            ),
            "    ",
        )
    )
