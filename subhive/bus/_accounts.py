"""One NATS account per hive, and the exports and imports between them, derived from each hive's grants: what
:mod:`subhive.bus._server` writes into the server's configuration. Why: docs/decisions/0056-an-account-per-hive.md.

A reply goes to the reply subject its sender chose, and no permission can restrict that subject; so inside one
account a hive could point the server's answers (a publish ack, a JetStream API answer) or a provider's reply at
another hive's stored subjects. Across accounts every request travels through a service import: the server
answers on a private reply subject in the exporting account and hands the answer back to the requester's own
account, where nothing but the requester's own imports can carry it further.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from subhive.errors import UsageError

from ._nkeys import NKey
from ._permissions import ADMIN_USER, Permissions, check_hive, check_password, inbox_prefix

#: How a user proves who it is: a password, or an NKey (only its public key is in the configuration).
Credential = str | NKey

__all__ = [
    "ACCOUNTS_MARK",
    "HUB_ACCOUNT",
    "JS_API_LOCAL",
    "AccountsConfig",
    "Credential",
    "accounts_config",
    "installable_accounts",
]

#: The framework's account: the admin user, every stream and consumer (JetStream is enabled here alone), the
#: mock providers. Hive names are lower case, so no hive's account can take this name.
HUB_ACCOUNT = "SUBHIVE"
#: Where a hive's JetStream API requests go inside its own account. The server answers ``$JS.API.>`` in an
#: account without JetStream itself ("not enabled"), so each granted API subject is mapped here first and
#: imported from the hub under its real name; clients keep using ``$JS.API``. Contract names start with a
#: letter, so no contract's subjects can meet this prefix.
JS_API_LOCAL = "subhive._js.API"
_JS_API = "$JS.API."
#: What the accounts installed on a cluster someone else runs say about themselves (decision 0121): in the hub
#: account, ``<mark>.digest`` is mapped to ``<mark>.<digest of the accounts>``, so the framework learns which
#: accounts a cluster holds by publishing one message to itself. No hive is given this subject.
ACCOUNTS_MARK = "subhive._accounts"
# Subjects only the hub serves: publish acks of streams and buckets, acks of consumers, dead letters.
_HUB_SERVICES = ("$KV.", "$JS.ACK.", "subhive.dlq.")


@dataclass
class _Account:
    """What one account's configuration holds, gathered before it is written."""

    users: list[dict[str, object]] = field(default_factory=list)
    mappings: dict[str, str] = field(default_factory=dict)
    # (kind, subject) -> the accounts allowed to import it; never empty (an export without a list is public).
    exports: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    # (kind, exporting account, subject, local name or "")
    imports: set[tuple[str, str, str, str]] = field(default_factory=set)

    def render(self, *, jetstream: bool) -> dict[str, object]:
        out: dict[str, object] = {}
        if jetstream:
            out["jetstream"] = "enabled"
        out["users"] = self.users
        if self.mappings:
            out["mappings"] = dict(sorted(self.mappings.items()))
        if self.exports:
            exports = sorted(self.exports.items())
            out["exports"] = [{kind: subject, "accounts": sorted(accounts)} for (kind, subject), accounts in exports]
        if self.imports:
            imports: list[dict[str, object]] = []
            for kind, account, subject, local in sorted(self.imports):
                entry: dict[str, object] = {kind: {"account": account, "subject": subject}}
                if local:
                    entry["to"] = local
                imports.append(entry)
            out["imports"] = imports
        return out


def _op_wildcard(subject: str) -> str | None:
    """``subhive.c.vN.op.name.*`` for a request subject ``subhive.c.vN.op.name.<sender>``, else None."""
    parts = subject.split(".")
    if len(parts) == 6 and parts[0] == "subhive" and parts[3] == "op" and parts[5] != "*":
        return ".".join([*parts[:5], "*"])
    return None


def _is_event(subject: str) -> bool:
    parts = subject.split(".")
    return len(parts) == 5 and parts[0] == "subhive" and parts[3] == "ev"


def _is_op_wildcard(subject: str) -> bool:
    parts = subject.split(".")
    return len(parts) == 6 and parts[0] == "subhive" and parts[3] == "op" and parts[5] == "*"


class _Tree:
    """The accounts of a tree, filled in one granted subject at a time."""

    def __init__(self, users: Mapping[str, tuple[Credential, Permissions]], admin: Credential) -> None:
        self.accounts: dict[str, _Account] = {HUB_ACCOUNT: _Account(users=[_user(ADMIN_USER, admin)])}
        for hive in sorted(users):
            self.accounts[hive] = _Account()
        # Who may subscribe to, and who may publish on, each granted subject: looked up once per subject rather
        # than by scanning every hive (a tree of hundreds of hives re-renders this at every lock change).
        self.subscribers: dict[str, list[str]] = defaultdict(list)
        self.publishers: dict[str, list[str]] = defaultdict(list)
        for hive in sorted(users):
            _, permissions = users[hive]
            for subject in permissions.subscribe:
                self.subscribers[subject].append(hive)
            for subject in permissions.publish:
                self.publishers[subject].append(hive)

    def link(self, kind: str, exporter: str, subject: str, importer: str, *, local: str = "") -> None:
        self.accounts[exporter].exports[(kind, subject)].add(importer)
        self.accounts[importer].imports.add((kind, exporter, subject, local))

    def publish(self, hive: str, subject: str) -> str:
        """Wire up one subject ``hive`` may publish to; returns the subject its permission must name."""
        wildcard = _op_wildcard(subject)
        if subject.startswith(_JS_API) and "*" not in subject and ">" not in subject:
            local = JS_API_LOCAL + "." + subject[len(_JS_API) :]
            self.accounts[hive].mappings[subject] = local  # the server checks the mapped subject
            self.link("service", HUB_ACCOUNT, subject, hive, local=local)
            return local
        if wildcard is not None and hive not in self.subscribers.get(wildcard, ()):
            # A request: to the hive that serves the operation, or to the hub's mock provider when none does.
            providers = self.subscribers.get(wildcard, [])
            if len(providers) > 1:  # the consumer could import from one only, and the hub would reach both
                raise UsageError(
                    f"{', '.join(providers)} all serve {wildcard}: one operation has one provider",
                    code="bus.provider_conflict",
                    hint="a contract is provided by one hive (more processes of it share the work)",
                )
            provider = providers[0] if providers else HUB_ACCOUNT
            self.accounts[provider].exports[("service", wildcard)].add(hive)
            self.accounts[hive].imports.add(("service", provider, subject, ""))
        elif _is_event(subject) or subject.startswith(_HUB_SERVICES):
            self.link("service", HUB_ACCOUNT, subject, hive)  # stored (and acknowledged) by the hub
        return subject

    def subscribe(self, hive: str, subject: str) -> None:
        """Wire up one subject ``hive`` may subscribe to."""
        if subject == f"{inbox_prefix(hive)}.>":
            # Durable deliveries and replays come from the hub; answers to its requests come back by themselves.
            for part in ("deliver", "replay"):
                self.link("stream", HUB_ACCOUNT, f"{inbox_prefix(hive)}.{part}.>", hive)
        elif _is_op_wildcard(subject):
            self.link("service", hive, subject, HUB_ACCOUNT)  # the framework replays dead-lettered requests
        elif _is_event(subject) and hive not in self.publishers.get(subject, ()):
            # Events as plain messages (a transport without durable events) come from their publisher.
            for publisher in self.publishers.get(subject) or [HUB_ACCOUNT]:
                self.link("stream", publisher, subject, hive)


def _user(name: str, credential: Credential) -> dict[str, object]:
    if isinstance(credential, NKey):
        return {"nkey": credential.public_key}
    return {"user": name, "password": credential}


def _build(users: Mapping[str, tuple[Credential, Permissions]], admin: Credential) -> dict[str, _Account]:
    tree = _Tree(users, admin)
    for hive in sorted(users):
        credential, permissions = users[hive]
        publish = [tree.publish(hive, subject) for subject in permissions.publish]
        for subject in permissions.subscribe:
            tree.subscribe(hive, subject)
        grants = Permissions(tuple(publish), permissions.subscribe, permissions.allow_responses)
        tree.accounts[hive].users.append({**_user(hive, credential), "permissions": grants.to_config()})
    return tree.accounts


@dataclass(frozen=True)
class AccountsConfig:
    """Users of the embedded server: each hive's ``(credential, Permissions)`` and the admin's credential, each
    a password or an :class:`~subhive.bus.NKey` (``subhive up`` uses NKeys: decision 0058).

    Passwords are not shown by ``repr``.

    >>> cfg = AccountsConfig({"web": ("s3cret-token", Permissions(publish=("a",)))}, admin_password="adm1n-token")
    >>> "s3cret" in repr(cfg)
    False
    """

    users: Mapping[str, tuple[Credential, Permissions]] = field(repr=False)
    admin_password: Credential = field(repr=False)

    def __post_init__(self) -> None:
        accounts_config(self.users, admin_password=self.admin_password)  # validates every name and password

    @property
    def hives(self) -> tuple[str, ...]:
        return tuple(sorted(self.users))

    def render(self) -> str:
        return accounts_config(self.users, admin_password=self.admin_password)

    @property
    def digest(self) -> str:
        """What these accounts are, in 32 hex digits: equal digests, equal accounts, users and grants."""
        return hashlib.sha256(self.render().encode()).hexdigest()[:32]


def accounts_config(users: Mapping[str, tuple[Credential, Permissions]], *, admin_password: Credential) -> str:
    """The ``accounts { ... }`` block of the server configuration: the hub account (:data:`HUB_ACCOUNT`) with
    the admin user, who has no permission list and hence full rights there, and one account per hive with its
    user, its permissions, and the imports its grants need (exported to that account alone).

    >>> print(accounts_config({}, admin_password="adm1n-token"))
    accounts {
      "SUBHIVE": {"jetstream": "enabled", "users": [{"user": "_admin", "password": "adm1n-token"}]}
    }
    """
    if not isinstance(admin_password, NKey):
        check_password(admin_password, "admin")
    for hive in sorted(users):
        check_hive(hive)
        credential, permissions = users[hive]
        if not isinstance(credential, NKey):
            check_password(credential, f"hive {hive}'s")
        if not isinstance(permissions, Permissions):
            raise UsageError(
                f"the permissions of hive {hive} are not a Permissions object", code="bus.permissions_invalid"
            )
    lines = ",\n".join(_entries(_build(users, admin_password)))
    return f"accounts {{\n{lines}\n}}"


def _entries(accounts: dict[str, _Account]) -> list[str]:
    # JSON is a subset of the server's configuration syntax, and quoting keeps "$JS..." from being read as
    # a variable reference.
    return [
        f"  {json.dumps(name)}: {json.dumps(account.render(jetstream=name == HUB_ACCOUNT))}"
        for name, account in accounts.items()
    ]


def installable_accounts(config: AccountsConfig, *, source: str = "") -> str:
    """The accounts of ``config`` as lines to ``include`` inside the ``accounts { }`` block of a cluster someone
    else runs (beside that cluster's own accounts): one account a line, no passwords when the users are NKeys,
    and in the hub account the mapping that tells the framework which accounts are installed
    (:data:`ACCOUNTS_MARK`). ``source`` is said in the heading comment (the workspace they come from).

    >>> text = installable_accounts(AccountsConfig({}, admin_password="adm1n-token"))
    >>> [line.split(":")[0] for line in text.splitlines() if not line.startswith("#")]
    ['  "SUBHIVE"']
    >>> "subhive._accounts.digest" in text
    True
    """
    accounts = _build(config.users, config.admin_password)
    accounts[HUB_ACCOUNT].mappings[f"{ACCOUNTS_MARK}.digest"] = f"{ACCOUNTS_MARK}.{config.digest}"
    heading = [
        f"# subhive accounts{f' of {source}' if source else ''}, digest {config.digest}: made by `subhive nats",
        "# accounts`; include it inside the accounts { } block of every node, then reload them (docs/cluster.md).",
    ]
    return "\n".join(heading + _entries(accounts)) + "\n"
