"""A 3-node cluster on loopback with an account per hive: streams, buckets and consumers replicated three times;
one node SIGKILLed in the middle of a stream of events and board writes loses nothing acknowledged, stores
nothing twice, and rejoins and catches up (decision 0057; facts in ../shared/NATS-CLUSTER-NOTES.md).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    BusError,
    EmbeddedCluster,
    NatsTransport,
    ServerConfig,
    ensure_consumers,
    ensure_event_streams,
    event_consumer,
    hive_permissions,
    jetstream_ready,
)
from subhive.hive import KvBlackboard, ensure_blackboard
from tests.kit import run

from ._contracts import orders

OPERATIONS = {("orders", 1): ["place_order"]}
EVENTS = {("orders", 1): ["order_placed"]}
LOCK = {"backend": ({"orders": [1]}, {}), "web": ({}, {"orders": [1]})}
PASSWORDS = {hive: secrets.token_urlsafe(24) for hive in (*LOCK, ADMIN_USER)}
STREAM = "SUBHIVE_EV_orders_v1"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    users = {hive: (PASSWORDS[hive], hive_permissions(hive, *LOCK[hive], OPERATIONS, EVENTS)) for hive in LOCK}
    accounts = AccountsConfig(users, admin_password=PASSWORDS[ADMIN_USER])
    started = EmbeddedCluster.start_sync(ServerConfig(tmp_path / "nats", accounts=accounts), nodes=3)
    try:
        yield started
    finally:
        started.kill()


async def _admin(cluster: EmbeddedCluster) -> Client:
    nc = await nats.connect(cluster.urls, user=ADMIN_USER, password=PASSWORDS[ADMIN_USER])
    await jetstream_ready(nc)
    return nc


async def _provision(admin: Client) -> None:
    js = admin.jetstream()
    for attempt in range(50):  # right after startup placement can fail once ("no suitable peers")
        try:
            await ensure_event_streams(js, [("orders", 1)], hives=list(LOCK), replicas=3)
            for hive in LOCK:
                await ensure_blackboard(js, hive, replicas=3)
            await ensure_consumers(js, [event_consumer("web", "orders", 1, "order_placed")])
            return
        except nats.js.errors.APIError:
            if attempt == 49:
                raise
            await asyncio.sleep(0.2)


def _node(cluster: EmbeddedCluster, name: str) -> int:
    return int(name.removeprefix("n")) - 1


def test_every_node_answers_and_streams_and_boards_are_kept_three_times(cluster: EmbeddedCluster) -> None:
    async def scenario() -> tuple[int, int, int]:
        admin = await _admin(cluster)
        try:
            await _provision(admin)
            js = admin.jetstream()
            stream = (await js.stream_info(STREAM)).cluster
            board = (await js.stream_info("KV_bb_web")).cluster
            assert stream is not None
            assert board is not None
            answered = 0
            for url in cluster.urls:  # each node alone serves the whole tree
                nc = await nats.connect(url, user="web", password=PASSWORDS["web"], inbox_prefix="_INBOX_web")
                kv = await KvBlackboard.open(nc.jetstream(), "web")
                await kv.put(f"tasks.{answered}", {"from": url}, writer="web")
                answered += 1
                await nc.close()
            return 1 + len(stream.replicas or []), 1 + len(board.replicas or []), answered
        finally:
            await admin.close()

    assert run(scenario()) == (3, 3, 3)


def test_killing_a_node_mid_stream_loses_no_acknowledged_event_or_write_and_stores_none_twice(
    cluster: EmbeddedCluster,
) -> None:
    """backend publishes 150 events and writes 150 board keys, one after another, while the node leading the
    event stream is SIGKILLed after the 50th: every publish and write returns (retried through the election
    with the same message id), the stream holds each event once, web handles every one, every key is there,
    and the killed node comes back and catches up."""
    count, kill_at = 150, 50
    received: set[str] = set()

    async def on_placed(payload: Any) -> None:
        received.add(payload["order_id"])

    async def scenario() -> tuple[int, int, set[str], int, bool]:
        admin = await _admin(cluster)
        backend = web = None
        try:
            await _provision(admin)
            js = admin.jetstream()
            backend = await NatsTransport.connect(
                cluster.endpoint("backend", PASSWORDS["backend"]), "backend", failover=30.0
            )
            web = await NatsTransport.connect(cluster.endpoint("web", PASSWORDS["web"]), "web", failover=30.0)
            await web.subscribe(orders(), "order_placed", on_placed)
            board = await KvBlackboard.open(backend.connection.jetstream(), "backend", failover=30.0)
            victim = -1
            for i in range(count):
                if i == kill_at:
                    leader = (await js.stream_info(STREAM)).cluster
                    assert leader is not None
                    assert leader.leader
                    victim = _node(cluster, leader.leader)
                    cluster.nodes[victim].kill()
                await backend.publish(orders(), "order_placed", {"order_id": f"o-{i}"})
                await board.put(f"tasks.t{i}", {"n": i}, writer="backend")
            async with asyncio.timeout(60):
                while len(received) < count:
                    await asyncio.sleep(0.05)
            await cluster.nodes[victim].restart()
            caught_up = False
            async with asyncio.timeout(60):
                while not caught_up:
                    info = (await js.stream_info(STREAM)).cluster
                    replicas = info.replicas or [] if info is not None else []
                    caught_up = len(replicas) == 2 and all(r.current for r in replicas)
                    await asyncio.sleep(0.2)
            stored = (await js.stream_info(STREAM)).state.messages
            keys = len([k for k in await board.keys() if k.startswith("tasks.")])
            return stored, keys, set(received), backend.stats.retried, caught_up
        finally:
            for transport in (backend, web):
                if transport is not None:
                    await transport.close()
            await admin.close()

    stored, keys, handled, retried, caught_up = run(scenario(), timeout=240)
    assert stored == count  # each event once: retries carried the same message id
    assert keys == count  # every acknowledged write is there
    assert handled == {f"o-{i}" for i in range(count)}
    assert retried > 0  # the election was lived through, not missed
    assert caught_up


def test_a_request_waiting_on_a_node_that_dies_fails_at_once_as_retryable(cluster: EmbeddedCluster) -> None:
    """web's only server is killed while its request waits for a slow provider: the request fails at once with
    ``bus.unavailable`` (it may or may not have been handled) instead of waiting out its 30 s timeout."""

    async def slow(payload: Any) -> Any:
        await asyncio.sleep(3)
        return {"order_id": "late"}

    async def scenario() -> str:
        admin = await _admin(cluster)
        await _provision(admin)
        await admin.close()
        backend = await NatsTransport.connect(cluster.endpoint("backend", PASSWORDS["backend"]), "backend")
        web_node = cluster.nodes[2]
        web = await NatsTransport.connect(web_node.endpoint("web", PASSWORDS["web"]), "web", request_timeout=30.0)
        try:
            await backend.serve(orders(), {"place_order": slow})
            waiting = asyncio.create_task(web.request(orders(), "place_order", {"sku": "A-1", "qty": 1}))
            await asyncio.sleep(0.5)
            web_node.kill()
            with pytest.raises(BusError) as failed:
                async with asyncio.timeout(10):
                    await waiting
            return failed.value.code
        finally:
            await backend.close()
            await web.close()

    assert run(scenario(), timeout=60) == "bus.unavailable"


def test_an_idempotent_request_caught_on_a_dying_node_is_sent_again_and_answered(cluster: EmbeddedCluster) -> None:
    """The operation is idempotent (its contract says so): when web's node dies while the request waits, the
    transport sends it once more on the connection that comes back, and the caller gets the answer."""
    from subhive.bus import BusEndpoint
    from subhive.runtime import ContractBinding

    data = orders().to_dict()
    data["operations"]["place_order"]["idempotent"] = True
    idempotent = ContractBinding.from_dict(data)
    assert idempotent.idempotent == frozenset({"place_order"})
    handled: list[Any] = []

    async def slow(payload: Any) -> Any:
        handled.append(payload)
        await asyncio.sleep(1.0)
        return {"order_id": f"o-{len(handled)}"}

    async def scenario() -> tuple[Any, int]:
        admin = await _admin(cluster)
        await _provision(admin)
        await admin.close()
        provider_node, *others = cluster.nodes
        backend = await NatsTransport.connect(provider_node.endpoint("backend", PASSWORDS["backend"]), "backend")
        endpoint = BusEndpoint([n.url for n in others], user="web", password=PASSWORDS["web"])
        web = await NatsTransport.connect(endpoint, "web", request_timeout=30.0)
        try:
            await backend.serve(idempotent, {"place_order": slow})
            waiting = asyncio.create_task(web.request(idempotent, "place_order", {"sku": "A-1", "qty": 1}))
            await asyncio.sleep(0.4)
            port = web.connection.connected_url.port if web.connection.connected_url else None
            (dying,) = [n for n in others if n.url.endswith(f":{port}")]
            dying.kill()
            async with asyncio.timeout(20):
                answer = await waiting
            return answer, web.stats.retried
        finally:
            await backend.close()
            await web.close()

    answer, retried = run(scenario(), timeout=60)
    assert answer["order_id"].startswith("o-")
    assert retried == 1
    assert len(handled) >= 1
