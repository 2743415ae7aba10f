"""A flat, normalized view of a ``FileDescriptorSet``: exactly what the protobuf compatibility rules look at."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from ..errors import InputError

__all__ = [
    "Cardinality",
    "EnumModel",
    "FieldModel",
    "FileModel",
    "MessageModel",
    "MethodModel",
    "ProtoSchema",
    "ServiceModel",
    "build_schema",
    "root_packages",
]

Cardinality = Literal["implicit", "explicit", "required", "repeated"]

# Resolved features the rules judge one by one; any *other* feature that differs is reported as unprovable.
# repeated_field_encoding, json_format, enforce_naming_style and default_symbol_visibility only steer protoc
# or the writer (parsers accept packed and expanded repeated fields alike).
_MODELLED_FEATURES = (
    "field_presence",
    "enum_type",
    "utf8_validation",
    "message_encoding",
    "repeated_field_encoding",
    "json_format",
    "enforce_naming_style",
    "default_symbol_visibility",
)

# File options that only steer generated code (buf's FILE_SAME_* rules): compared under PACKAGE and FILE.
_CODE_OPTIONS = (
    "go_package",
    "java_package",
    "java_outer_classname",
    "java_multiple_files",
    "java_generic_services",
    "csharp_namespace",
    "objc_class_prefix",
    "php_namespace",
    "php_class_prefix",
    "php_metadata_namespace",
    "ruby_package",
    "swift_prefix",
    "optimize_for",
    "cc_enable_arenas",
    "cc_generic_services",
    "py_generic_services",
)

# descriptor.proto field numbers used in SourceCodeInfo paths
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE, _FILE_EXTENSION = 4, 5, 6, 7
_MSG_FIELD, _MSG_NESTED, _MSG_ENUM, _MSG_EXTENSION = 2, 3, 4, 6
_ENUM_VALUE, _SERVICE_METHOD = 2, 2


@dataclass(frozen=True, slots=True)
class FieldModel:
    name: str
    full_name: str
    number: int
    json_name: str
    type: int  # FieldDescriptor.TYPE_*; delimited (group) encoding shows as TYPE_GROUP
    type_name: str  # canonical full name of the message or enum type, "" for scalars
    cardinality: Cardinality
    oneof: str | None  # the real oneof it belongs to (proto3 ``optional`` is not one)
    default: object  # the default of a singular scalar, None otherwise
    utf8_verify: bool  # strings only: parsers reject invalid UTF-8
    is_map: bool
    features: bytes  # resolved features the rules do not model, serialized for comparison
    where: str
    code_options: tuple[tuple[str, str], ...] = ()  # options that steer generated code only (ctype, jstype, ...)


@dataclass(frozen=True, slots=True)
class MessageModel:
    name: str
    fields: dict[int, FieldModel]
    numbers: dict[str, int]  # field name -> number
    reserved: tuple[tuple[int, int], ...]  # half-open ranges
    reserved_names: frozenset[str]
    extension_ranges: tuple[tuple[int, int], ...]  # half-open ranges
    map_entry: bool
    file: str
    where: str


@dataclass(frozen=True, slots=True)
class EnumModel:
    name: str
    values: dict[int, tuple[str, ...]]  # number -> names in declaration order (aliases share a number)
    numbers: dict[str, int]
    closed: bool
    reserved: tuple[tuple[int, int], ...]  # half-open ranges
    reserved_names: frozenset[str]
    file: str
    where: str


@dataclass(frozen=True, slots=True)
class MethodModel:
    name: str
    input: str
    output: str
    client_streaming: bool
    server_streaming: bool
    where: str
    idempotency: str = "IDEMPOTENCY_UNKNOWN"  # MethodOptions.idempotency_level


@dataclass(frozen=True, slots=True)
class ServiceModel:
    name: str
    methods: dict[str, MethodModel]
    file: str
    where: str


@dataclass(frozen=True, slots=True)
class FileModel:
    name: str
    package: str
    syntax: str  # "proto2", "proto3" or "edition 2023", ...
    is_root: bool  # not imported by another file of the set
    options: tuple[tuple[str, str], ...] = ()  # the code-steering options that are set, as (name, value)


@dataclass(frozen=True, slots=True)
class ProtoSchema:
    files: dict[str, FileModel]
    messages: dict[str, MessageModel]
    enums: dict[str, EnumModel]
    services: dict[str, ServiceModel]
    extensions: dict[tuple[str, int], FieldModel]  # (extended message, number) -> extension
    extension_files: dict[tuple[str, int], str]  # the file declaring each extension


def root_packages(fds: descriptor_pb2.FileDescriptorSet) -> set[str]:
    """The packages of the files nothing else in the set imports (the files that were asked for)."""
    imported = {dep for f in fds.file for dep in f.dependency}
    return {f.package for f in fds.file if f.name not in imported}


def build_schema(fds: descriptor_pb2.FileDescriptorSet, *, rename: tuple[str, str] | None = None) -> ProtoSchema:
    """Resolve ``fds`` in a fresh descriptor pool and flatten it; ``rename=(old_pkg, new_pkg)`` canonicalizes.

    Canonical names: when the analysed files moved to another package, the old set is built with the old
    package renamed to the new one, so ``a.v1.Order`` and ``a.v2.Order`` are compared as one message (the
    package change itself is reported once, by the diff). The pool decides presence, closed enums, delimited
    encoding, defaults and UTF-8 validation as the runtime does (proto2, proto3, editions); reserved ranges,
    proto3 ``optional`` and source lines come from the descriptor protos, which the pool does not expose.

    ``build_schema(compile_proto(path)).messages["shop.v1.Order"].fields[1].name`` -> ``'id'``
    """
    files = _ordered(fds)
    pool = _pool(files)
    imported = {dep for f in files for dep in f.dependency}
    builder = _Builder(pool, rename)
    models: dict[str, FileModel] = {}
    for file in files:
        models[file.name] = FileModel(
            file.name,
            _canonical_package(file.package, rename),
            _syntax(file),
            file.name not in imported,
            _code_options(file),
        )
        builder.add_file(file)
    return ProtoSchema(
        models, builder.messages, builder.enums, builder.services, builder.extensions, builder.extension_files
    )


def _canonical_package(package: str, rename: tuple[str, str] | None) -> str:
    return rename[1] if rename and package == rename[0] else package


def _syntax(file: descriptor_pb2.FileDescriptorProto) -> str:
    if file.syntax == "editions":
        return "edition " + descriptor_pb2.Edition.Name(file.edition).removeprefix("EDITION_")
    return file.syntax or "proto2"


def _code_options(file: descriptor_pb2.FileDescriptorProto) -> tuple[tuple[str, str], ...]:
    present = {field.name: value for field, value in file.options.ListFields()}
    return tuple((name, str(present[name])) for name in _CODE_OPTIONS if name in present)


def _ordered(fds: descriptor_pb2.FileDescriptorSet) -> list[descriptor_pb2.FileDescriptorProto]:
    """The files in dependency order (protoc already writes them so; hand-made sets may not)."""
    by_name = {f.name: f for f in fds.file}
    if len(by_name) != len(fds.file):
        raise _invalid("the descriptor set holds two files with the same name")
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(name: str, importer: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise _invalid(f"import cycle through {name}")
        if name not in by_name:
            raise _invalid(
                f"{importer} imports {name}, which the descriptor set does not contain",
                hint="build the set with --include_imports",
            )
        state[name] = 1
        for dep in by_name[name].dependency:
            visit(dep, name)
        state[name] = 2
        ordered.append(by_name[name])

    for file in fds.file:
        visit(file.name, file.name)
    return ordered


def _pool(files: list[descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        try:
            pool.Add(file)
        except (TypeError, ValueError, KeyError) as exc:  # the runtime's words for an inconsistent file
            raise _invalid(f"{file.name} cannot be loaded: {exc}") from exc
    return pool


def _invalid(message: str, hint: str | None = None) -> InputError:
    return InputError(f"invalid descriptor set: {message}", code="proto.descriptor_invalid", hint=hint)


def _half_open(ranges: Iterable[descriptor_pb2.DescriptorProto.ReservedRange]) -> tuple[tuple[int, int], ...]:
    return tuple((r.start, r.end) for r in ranges)


class _Builder:
    """Walks descriptor protos and their pool descriptors side by side, filling the flat tables."""

    def __init__(self, pool: descriptor_pool.DescriptorPool, rename: tuple[str, str] | None) -> None:
        self.pool = pool
        self.rename = rename
        self.messages: dict[str, MessageModel] = {}
        self.enums: dict[str, EnumModel] = {}
        self.services: dict[str, ServiceModel] = {}
        self.extensions: dict[tuple[str, int], FieldModel] = {}
        self.extension_files: dict[tuple[str, int], str] = {}
        self.lines: dict[tuple[int, ...], int] = {}
        self.file = ""
        self.package = ""

    def canon(self, full_name: str, package: str | None = None) -> str:
        """``full_name`` (declared in ``package``, by default the current file's) under the canonical package."""
        if self.rename is None:
            return full_name
        old, new = self.rename
        if (self.package if package is None else package) != old:
            return full_name
        rest = full_name[len(old) + 1 :] if old else full_name
        return f"{new}.{rest}" if new else rest

    def where(self, path: tuple[int, ...]) -> str:
        line = self.lines.get(path)
        return f"{self.file}:{line}" if line else self.file

    def add_file(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.file = file.name
        self.package = file.package
        self.lines = {tuple(loc.path): loc.span[0] + 1 for loc in file.source_code_info.location if loc.span}
        prefix = f"{file.package}." if file.package else ""
        for i, message in enumerate(file.message_type):
            self.add_message(message, prefix + message.name, (_FILE_MESSAGE, i))
        for i, enum in enumerate(file.enum_type):
            self.add_enum(enum, prefix + enum.name, (_FILE_ENUM, i))
        for i, service in enumerate(file.service):
            self.add_service(service, prefix + service.name, (_FILE_SERVICE, i))
        for i, ext in enumerate(file.extension):
            self.add_extension(ext, prefix + ext.name, (_FILE_EXTENSION, i))

    def add_message(self, proto: descriptor_pb2.DescriptorProto, full_name: str, path: tuple[int, ...]) -> None:
        desc: Descriptor = self.pool.FindMessageTypeByName(full_name)
        fields: dict[int, FieldModel] = {}
        for i, field in enumerate(proto.field):
            fd = desc.fields_by_number[field.number]
            oneof = None
            if field.HasField("oneof_index") and not field.proto3_optional:
                oneof = proto.oneof_decl[field.oneof_index].name
            fields[field.number] = self.field(
                fd, f"{self.canon(full_name)}.{field.name}", oneof, (*path, _MSG_FIELD, i)
            )
        name = self.canon(full_name)
        self.messages[name] = MessageModel(
            name=name,
            fields=fields,
            numbers={f.name: f.number for f in fields.values()},
            reserved=_half_open(proto.reserved_range),
            reserved_names=frozenset(proto.reserved_name),
            extension_ranges=tuple((r.start, r.end) for r in proto.extension_range),
            map_entry=proto.options.map_entry,
            file=self.file,
            where=self.where(path),
        )
        for i, nested in enumerate(proto.nested_type):
            self.add_message(nested, f"{full_name}.{nested.name}", (*path, _MSG_NESTED, i))
        for i, enum in enumerate(proto.enum_type):
            self.add_enum(enum, f"{full_name}.{enum.name}", (*path, _MSG_ENUM, i))
        for i, ext in enumerate(proto.extension):
            self.add_extension(ext, f"{full_name}.{ext.name}", (*path, _MSG_EXTENSION, i))

    def field(self, fd: FieldDescriptor, full_name: str, oneof: str | None, path: tuple[int, ...]) -> FieldModel:
        type_name = ""
        if fd.message_type is not None:
            type_name = self.canon(fd.message_type.full_name, fd.message_type.file.package)
        elif fd.enum_type is not None:
            type_name = self.canon(fd.enum_type.full_name, fd.enum_type.file.package)
        is_repeated = fd.is_repeated
        cardinality: Cardinality
        if is_repeated:
            cardinality = "repeated"
        elif fd.is_required:
            cardinality = "required"
        else:
            cardinality = "explicit" if fd.has_presence else "implicit"
        scalar = not is_repeated and fd.message_type is None
        features = _features(fd)
        return FieldModel(
            name=fd.name,
            full_name=full_name,
            number=fd.number,
            json_name=fd.json_name,
            type=fd.type,
            type_name=type_name,
            cardinality=cardinality,
            oneof=oneof,
            default=fd.default_value if scalar else None,
            utf8_verify=fd.type == FieldDescriptor.TYPE_STRING
            and features.utf8_validation == descriptor_pb2.FeatureSet.VERIFY,
            is_map=is_repeated and fd.message_type is not None and fd.message_type.GetOptions().map_entry,
            features=_residual(features),
            where=self.where(path),
            code_options=_field_code_options(fd),
        )

    def add_enum(self, proto: descriptor_pb2.EnumDescriptorProto, full_name: str, path: tuple[int, ...]) -> None:
        desc: EnumDescriptor = self.pool.FindEnumTypeByName(full_name)
        values: dict[int, tuple[str, ...]] = {}
        for value in proto.value:
            values[value.number] = (*values.get(value.number, ()), value.name)
        name = self.canon(full_name)
        # Enum reserved ranges are inclusive at both ends, unlike message ones.
        self.enums[name] = EnumModel(
            name=name,
            values=values,
            numbers={v.name: v.number for v in proto.value},
            closed=desc.is_closed,
            reserved=tuple((r.start, r.end + 1) for r in proto.reserved_range),
            reserved_names=frozenset(proto.reserved_name),
            file=self.file,
            where=self.where(path),
        )

    def add_service(self, proto: descriptor_pb2.ServiceDescriptorProto, full_name: str, path: tuple[int, ...]) -> None:
        service = self.pool.FindServiceByName(full_name)
        methods: dict[str, MethodModel] = {}
        for i, method in enumerate(proto.method):
            md = service.methods_by_name[method.name]
            methods[method.name] = MethodModel(
                name=method.name,
                input=self.canon(md.input_type.full_name, md.input_type.file.package),
                output=self.canon(md.output_type.full_name, md.output_type.file.package),
                client_streaming=method.client_streaming,
                server_streaming=method.server_streaming,
                where=self.where((*path, _SERVICE_METHOD, i)),
                idempotency=descriptor_pb2.MethodOptions.IdempotencyLevel.Name(method.options.idempotency_level),
            )
        name = self.canon(full_name)
        self.services[name] = ServiceModel(name, methods, self.file, self.where(path))

    def add_extension(self, proto: descriptor_pb2.FieldDescriptorProto, full_name: str, path: tuple[int, ...]) -> None:
        fd = self.pool.FindExtensionByName(full_name)
        target = fd.containing_type
        if target is None:  # the pool always links an extension to the message it extends
            raise _invalid(f"extension {full_name} extends nothing")
        extendee = self.canon(target.full_name, target.file.package)
        self.extensions[(extendee, proto.number)] = self.field(fd, self.canon(full_name), None, path)
        self.extension_files[(extendee, proto.number)] = self.file


def _field_code_options(fd: FieldDescriptor) -> tuple[tuple[str, str], ...]:
    """The effective ``ctype`` and ``jstype`` (their defaults when unset): C++ and JavaScript code only; for a
    string field (or a map with string keys or values) also whether generated Java code checks UTF-8: the
    file's ``java_string_check_utf8``, so a message moved to a file without it changes too."""
    options = descriptor_pb2.FieldOptions.FromString(fd.GetOptions().SerializeToString())
    found = [
        ("ctype", descriptor_pb2.FieldOptions.CType.Name(options.ctype)),
        ("jstype", descriptor_pb2.FieldOptions.JSType.Name(options.jstype)),
    ]
    entry = fd.message_type if fd.message_type is not None and fd.message_type.GetOptions().map_entry else None
    strings = [fd] if entry is None else list(entry.fields)  # a map's key and value are its entry's fields
    if any(f.type == FieldDescriptor.TYPE_STRING for f in strings):
        declared_in = fd.file  # type: ignore[attr-defined]  # present at run time, missing from the stubs
        file_options = descriptor_pb2.FileOptions.FromString(declared_in.GetOptions().SerializeToString())
        found.append(("java_string_check_utf8", str(file_options.java_string_check_utf8).lower()))
    return tuple(found)


def _features(fd: FieldDescriptor) -> descriptor_pb2.FeatureSet:
    # The resolved features are only reachable through a private accessor (protobuf >= 5.27); copy them into
    # our own FeatureSet class so they can be edited and compared.
    resolved = fd._GetFeatures()  # type: ignore[attr-defined]
    return descriptor_pb2.FeatureSet.FromString(resolved.SerializeToString())


def _residual(features: descriptor_pb2.FeatureSet) -> bytes:
    rest = descriptor_pb2.FeatureSet()
    rest.CopyFrom(features)
    for name in _MODELLED_FEATURES:
        if name in rest.DESCRIPTOR.fields_by_name:  # older runtimes lack the newest features
            rest.ClearField(name)  # type: ignore[arg-type]
    return rest.SerializeToString(deterministic=True)
