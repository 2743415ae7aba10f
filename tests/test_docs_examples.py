"""The Python examples the docs mark as runnable (a fence opened with ```` ```python runnable ````) are run,
each in a fresh namespace, so a page cannot drift from the code it shows. Other blocks are sketches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"^```python runnable\n(.*?)^```$", re.M | re.S)


def _examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        text = page.read_text(encoding="utf-8")
        for number, match in enumerate(_BLOCK.finditer(text), 1):
            line = text.count("\n", 0, match.start()) + 2  # the block's first line of code
            found.append((f"{page.relative_to(REPO)}:{line} (block {number})", match.group(1)))
    return found


EXAMPLES = _examples()


def test_the_docs_have_runnable_examples() -> None:
    assert any(where.startswith("docs/hives.md") for where, _ in EXAMPLES)


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_a_runnable_example_runs(where: str, code: str) -> None:
    # Compiled under the page's name, so a failure's traceback points into the doc.
    exec(compile(code, where, "exec"), {"__name__": "__docs_example__"})
