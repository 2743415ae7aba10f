"""Workspaces and sub-hives: ``hive.toml``, ``subhives/<name>/subhive.toml``, and the scaffolds that make them.
See docs/workspace.md; why sub-hives sit side by side: docs/decisions/0006-subhive-manifest.md.

    >>> from subhive.workspace import init_workspace, new_subhive, open_workspace, Kind
    >>> init_workspace("shop")  # doctest: +SKIP
    >>> new_subhive("db", Kind.db, start="shop")  # doctest: +SKIP
    >>> sorted(open_workspace("shop").hives().hives)  # doctest: +SKIP
    ['db']
"""

from ._agents import AGENT_TOOLS, AgentBudgets, AgentModel, AgentSpec, AgentTrigger
from ._checks import REVIEWED_CHANGES, MemorySpec, QuorumSpec, ReviewSpec
from ._grpc import GrpcSettings
from ._kinds import DEFAULT_RANGE, DRAFT_VERSION, KIND_DEFAULTS, KindDefaults
from ._limits import DEFAULT_DEAD_LETTER_LIMITS, DeadLetterLimits, format_age, format_size
from ._manifest import (
    MANIFEST_NAME,
    MAX_HIVE_NAME,
    ROOT_HIVE,
    Budgets,
    Kind,
    ManifestInvalid,
    Requirement,
    SubhiveManifest,
    check_hive_name,
    load_manifest,
    parse_manifest,
)
from ._nats import NatsSettings
from ._plan import FileAction, Plan, PlannedFile, apply_plan
from ._ranges import VersionRange
from ._scaffold import init_workspace, new_hive_files, new_subhive, plan_init, plan_new
from ._toml import TomlDocument, read_toml
from ._up import UpSettings
from ._workspace import (
    WORKSPACE_FILE,
    HiveTree,
    Workspace,
    WorkspaceConfig,
    find_root,
    open_workspace,
    read_config,
)

__all__ = [
    "AGENT_TOOLS",
    "DEFAULT_DEAD_LETTER_LIMITS",
    "DEFAULT_RANGE",
    "DRAFT_VERSION",
    "KIND_DEFAULTS",
    "MANIFEST_NAME",
    "MAX_HIVE_NAME",
    "REVIEWED_CHANGES",
    "ROOT_HIVE",
    "WORKSPACE_FILE",
    "AgentBudgets",
    "AgentModel",
    "AgentSpec",
    "AgentTrigger",
    "Budgets",
    "DeadLetterLimits",
    "FileAction",
    "GrpcSettings",
    "HiveTree",
    "Kind",
    "KindDefaults",
    "ManifestInvalid",
    "MemorySpec",
    "NatsSettings",
    "Plan",
    "PlannedFile",
    "QuorumSpec",
    "Requirement",
    "ReviewSpec",
    "SubhiveManifest",
    "TomlDocument",
    "UpSettings",
    "VersionRange",
    "Workspace",
    "WorkspaceConfig",
    "apply_plan",
    "check_hive_name",
    "find_root",
    "format_age",
    "format_size",
    "init_workspace",
    "load_manifest",
    "new_hive_files",
    "new_subhive",
    "open_workspace",
    "parse_manifest",
    "plan_init",
    "plan_new",
    "read_config",
    "read_toml",
]
