"""`subhive decompose` on the command line: text and JSON output, --write, and bad input without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import subhive.decompose
from tests.decompose._fixtures import polyglot_shop, write_tree
from tests.kit import cli


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "decompose", "--help")
    assert code == 0
    assert "Example: subhive decompose" in out


def test_text_output_is_a_summary_and_lists_files_only_on_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shop = polyglot_shop(tmp_path / "shop")
    code, out, err = cli(capsys, "decompose", str(shop), "--max-files", "4")
    assert code == 0
    assert out.splitlines()[2] == "root"
    assert "├── " in out
    assert "web/src/App.tsx" not in out  # no file lists unless asked
    assert "import edges: 14 total, " in out
    assert "heaviest crossings" in out
    assert "candidate contracts" in out
    assert "--explain" in out
    assert "decompose: listed 24 files" in err
    code, out, _ = cli(capsys, "decompose", str(shop), "--max-files", "4", "--files", "-q")
    assert code == 0
    for path in ("web/src/App.tsx", "inventory/go.mod", "docs/index.md"):
        assert f"  {path}\n" in out


def test_explain_names_every_boundary_its_edges_and_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shop = polyglot_shop(tmp_path / "shop")
    code, out, _ = cli(capsys, "decompose", str(shop), "--max-files", "3", "--explain", "-q")
    assert code == 0
    boundaries = out[out.index("boundaries:") :].splitlines()[1:]
    plan = subhive.decompose.decompose(shop, subhive.decompose.Budget(max_files=3))
    pairs = {tuple(sorted((c.consumer, c.provider))) for c in plan.crossings}
    headers = [line for line in boundaries if line.startswith("  ") and not line.startswith("    ")]
    assert len(headers) == len(pairs) > 0
    for line in headers:
        assert "too big for one leaf" in line or "top level" in line
        assert "together" in line
    source, target = plan.crossings[0].edges[0]
    assert f"      {source} -> {target}" in boundaries


def test_a_byte_budget_that_binds_first_is_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(4):
        (repo / f"m{n}.py").write_text("x = 1\n" * 100)  # 600 bytes each
    code, out, err = cli(capsys, "decompose", str(repo), "--max-bytes", "1000")
    assert code == 0
    assert "warning: the byte budget (1,000 bytes) binds before the file budget (200 files)" in out
    assert "binds before the file budget" in err
    code, out, _ = cli(capsys, "decompose", str(repo), "--max-bytes", "100000", "-q")
    assert "warning" not in out


def test_json_output_is_one_document_and_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shop = polyglot_shop(tmp_path / "shop")
    code, out, _ = cli(capsys, "decompose", str(shop), "--max-files", "4", "--format", "json", "-q")
    assert code == 0
    document = json.loads(out)
    assert document["stats"]["edges_total"] == 14
    assert document["budget"] == {"max_files": 4, "max_bytes": 2_000_000}
    assert sum(len(h["files"]) for h in document["hives"] if h["leaf"]) == 24
    _, again, _ = cli(capsys, "decompose", str(shop), "--max-files", "4", "--format", "json", "-q")
    assert again == out


def test_write_makes_a_workspace_that_lints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shop = polyglot_shop(tmp_path / "shop")
    code, out, err = cli(
        capsys,
        "decompose",
        str(shop),
        "--max-files",
        "3",
        "--write",
        "-C",
        str(tmp_path / "ws"),
        "--format",
        "json",
        "-q",
    )
    assert code == 0, err
    assert json.loads(out)["written"]["files"]
    assert "created " in err
    code, _, err = cli(capsys, "contract", "lint", str(tmp_path / "ws" / "contracts"))
    assert code == 0, err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["decompose", "{tmp}/missing"], "decompose.not_found"),
        (["decompose", "{tmp}/file.txt"], "decompose.not_a_directory"),
        (["decompose", "{tmp}/empty"], "decompose.empty"),
        (["decompose", "{tmp}", "--max-files", "0"], "decompose.budget_invalid"),
        (["decompose", "{tmp}", "--max-bytes", "-5"], "decompose.budget_invalid"),
    ],
)
def test_bad_input_exits_2_with_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], code: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    exit_code, out, err = cli(capsys, *args, "--format", "json")
    assert exit_code == 2
    assert json.loads(out)["error"] == code
    assert "Traceback" not in err
    assert "hint" in err


def test_the_public_surface_is_exactly_all() -> None:
    public = {name for name in vars(subhive.decompose) if not name.startswith("_")}
    assert set(subhive.decompose.__all__) == public - {"annotations"}
    for name in subhive.decompose.__all__:
        assert getattr(subhive.decompose, name) is not None


def test_the_same_output_across_processes_whatever_the_hash_seed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    shop = polyglot_shop(tmp_path / "shop")
    outputs = []
    for seed in ("1", "2"):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from subhive.cli import run; run()",
                "decompose",
                str(shop),
                "--max-files",
                "3",
                "--format",
                "json",
                "-q",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["stats"]["edges_cut"] > 0


def test_picture_is_a_self_contained_treemap_with_the_heaviest_crossings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import xml.etree.ElementTree as ET

    shop = polyglot_shop(tmp_path / "shop")
    code, _, err = cli(capsys, "decompose", str(shop), "--max-files", "3", "--picture", str(tmp_path / "plan.html"))
    assert code == 0
    assert f"picture: {tmp_path / 'plan.html'}" in err
    page = (tmp_path / "plan.html").read_text()
    assert "<script" not in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # no external asset
    svg = ET.fromstring(page[page.index("<svg") : page.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    plan = subhive.decompose.decompose(shop, subhive.decompose.Budget(max_files=3))
    titles = [g.find(f"{ns}title").text or "" for g in svg.iter(f"{ns}g") if g.get("class") in ("leaf", "hive")]  # type: ignore[union-attr]
    assert sorted(t.split(" ")[0] for t in titles) == sorted(h.name for h in plan.hives)
    lines = [g for g in svg.iter(f"{ns}g") if g.get("class") == "crossing"]
    assert len(lines) == min(25, len(plan.crossings)) > 0
    code, out, err = cli(capsys, "decompose", str(shop), "--picture", str(tmp_path / "no" / "plan.html"), "-f", "json")
    assert code == 2
    assert json.loads(out)["error"] == "decompose.picture_unwritable"
    assert "Traceback" not in err


def test_a_cycle_is_named_with_the_edges_of_its_weakest_link(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    for package, other, first in (("orders", "billing", "b0"), ("billing", "orders", "o1")):
        (repo / package).mkdir(parents=True)
        for n in range(4):
            name = f"{package[0]}{n}"
            own = f"from {package} import {package[0]}0\n" if n else f"from {other} import {first}\n"
            (repo / package / f"{name}.py").write_text(own)
    (repo / "orders" / "o2.py").write_text("from billing import b0\nfrom billing import b1\n")
    code, out, _ = cli(capsys, "decompose", str(repo), "--max-files", "4", "-q")
    assert code == 0
    assert (
        "cycle: billing <-> orders import each other and do not fit one leaf; weakest link billing -> orders (1 edges)"
        in out
    )
    assert "  billing/b0.py -> orders/o1.py\n" in out


def test_explain_says_which_boundaries_refinement_made_mutual(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a/m.js imports ten files of b/ and a/p.js, a/n.js imports m: moving m into b/ cuts 8 import edges more
    # than it adds, a gain of the cycle margin, so refinement makes a and b import each other (n -> m, m -> p);
    # together they hold 17 files, too many to merge at a budget of 12
    helpers = [f"q{k}" for k in range(4)]
    files = {f"b/y{k}.js": f"export const y{k} = {k};\n" for k in range(10)}
    files.update({f"a/{q}.js": f"export const {q} = 1;\n" for q in helpers})
    files["a/m.js"] = "".join(f"import {{ y{k} }} from '../b/y{k}.js';\n" for k in range(10)) + (
        "import { p } from './p.js';\nexport const m = 1;\n"
    )
    files["a/n.js"] = "import { m } from './m.js';\n" + "".join(f"import {{ {q} }} from './{q}.js';\n" for q in helpers)
    files["a/p.js"] = "".join(f"import {{ {q} }} from './{q}.js';\n" for q in helpers) + "export const p = 1;\n"
    repo = write_tree(tmp_path / "repo", files)
    code, out, _ = cli(capsys, "decompose", str(repo), "--max-files", "12", "--explain", "-q")
    assert code == 0
    assert "refinement made 1 pair(s) of hives import each other both ways" in out
    boundaries = out[out.index("boundaries:") :].splitlines()
    head = next(k for k, line in enumerate(boundaries) if line.startswith("  a | b: 2 edges"))
    assert boundaries[head + 1].startswith("    made mutual by refinement: moving code here cut at least 8 import")
    code, out, _ = cli(capsys, "decompose", str(repo), "--max-files", "12", "--format", "json")
    plan = json.loads(out)
    assert plan["made_mutual"] == [["a", "b"]]
    leaves = {hive["name"]: hive["files"] for hive in plan["hives"] if hive["leaf"]}
    assert "a/m.js" in leaves["b"]
    # the same tree at a budget that lets the two merge: no mutual pair is left to warn about
    code, out, _ = cli(capsys, "decompose", str(repo), "--max-files", "17", "--explain", "-q")
    assert code == 0
    assert "made mutual" not in out
    assert "both ways" not in out
