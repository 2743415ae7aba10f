"""Reading a hive's ``/metrics`` over real HTTP, as Prometheus does."""

from __future__ import annotations

import asyncio
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = list[tuple[str, dict[str, str], float]]


async def scrape(url: str) -> Samples:
    """Every sample the endpoint serves: (name, labels, value)."""

    def get() -> str:
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            body: bytes = response.read()
            return body.decode()

    text = await asyncio.to_thread(get)
    return [(s.name, dict(s.labels), s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there is none)."""
    return sum(v for n, got, v in samples if n == name and labels.items() <= got.items())
