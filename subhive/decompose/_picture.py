"""A picture of a plan: one self-contained HTML page holding an SVG treemap of the hives (area by files,
nested as the tree is) with the heaviest crossings drawn between the leaves, for a person to look at instead
of reading. No script, no external asset: it opens anywhere, offline. See docs/decompose.md#output.
"""

from __future__ import annotations

from html import escape

from ._model import DecompositionPlan, HivePlan

__all__ = ["render_picture"]

_WIDTH, _HEIGHT = 1200, 800
_PAD = 3
_LABEL = 14
#: Crossings drawn, heaviest first (all of them are in the JSON output).
_DRAWN = 25
_COLOURS = {
    "backend": "#9ecae1",
    "ui": "#fdae6b",
    "db": "#a1d99b",
    "tests": "#d9d9d9",
    "docs": "#dadaeb",
    "infra": "#fdd0a2",
    "config": "#c7e9c0",
    "assets": "#fcbba1",
    "other": "#e5e5e5",
}

Box = tuple[float, float, float, float]


def render_picture(plan: DecompositionPlan) -> str:
    """The plan as one HTML page with an SVG treemap and the heaviest crossings as arrows between leaves."""
    by_name = {hive.name: hive for hive in plan.hives}
    top = [hive for hive in plan.hives if hive.parent == "root"]
    boxes: dict[str, Box] = {}
    _layout(top, (0.0, 0.0, float(_WIDTH), float(_HEIGHT)), by_name, boxes)
    parts: list[str] = []
    for hive in plan.hives:
        x, y, w, h = boxes[hive.name]
        if w < 1 or h < 1:
            continue
        fill = _COLOURS.get(hive.role.value, "#eeeeee") if hive.leaf else "none"
        title = escape(f"{hive.name} [{hive.role.value}] {hive.path}/: {hive.file_count:,} files, {hive.bytes:,} bytes")
        parts.append(
            f'<g class="{"leaf" if hive.leaf else "hive"}"><title>{title}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" stroke="#555" '
            f'stroke-width="{0.6 if hive.leaf else 1.4}"/>'
        )
        if w > 40 and h > _LABEL:
            size = 11 if hive.leaf else 12
            parts.append(
                f'<text x="{x + 3:.1f}" y="{y + size:.1f}" font-size="{size}" '
                f'font-weight="{"normal" if hive.leaf else "bold"}">{escape(_fit(hive.name, w, size))}</text>'
            )
        parts.append("</g>")
    crossings = sorted(plan.crossings, key=lambda c: (-len(c.edges), c.consumer, c.provider))[:_DRAWN]
    heaviest = max((len(c.edges) for c in crossings), default=1)
    for crossing in crossings:
        (x1, y1), (x2, y2) = _centre(boxes[crossing.consumer]), _centre(boxes[crossing.provider])
        width = 1 + 5 * len(crossing.edges) / heaviest
        label = escape(f"{crossing.consumer} -> {crossing.provider}: {len(crossing.edges):,} edges")
        parts.append(
            f'<g class="crossing"><title>{label}</title><line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" '
            f'y2="{y2:.1f}" stroke="#c0392b" stroke-opacity="0.6" stroke-width="{width:.1f}" '
            'marker-end="url(#arrow)"/></g>'
        )
    stats = plan.stats
    heading = escape(
        f"{plan.root}: {stats.files:,} files in {sum(1 for _ in plan.leaves())} leaf hives "
        f"(budget {plan.budget.max_files:,} files); {stats.edges_cut:,} of {stats.edges_total:,} import edges cut; "
        f"the {len(crossings)} heaviest crossings drawn, consumer to provider"
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" font-family="sans-serif"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" '
        'refY="5" markerWidth="5" markerHeight="5" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#c0392b"/></marker></defs>' + "".join(parts) + "</svg>"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>subhive decompose: '
        f"{escape(plan.root)}</title></head><body><p>{heading}</p>\n{svg}\n</body></html>\n"
    )


def _layout(hives: list[HivePlan], box: Box, by_name: dict[str, HivePlan], out: dict[str, Box]) -> None:
    """Slice-and-dice by file count, alternating with the box's longer side, nested with a label strip."""
    total = sum(max(1, h.file_count) for h in hives) or 1
    x, y, w, h = box
    horizontal = w >= h
    offset = 0.0
    for hive in hives:
        share = max(1, hive.file_count) / total
        if horizontal:
            cell = (x + offset, y, w * share, h)
            offset += w * share
        else:
            cell = (x, y + offset, w, h * share)
            offset += h * share
        out[hive.name] = cell
        if not hive.leaf:
            cx, cy, cw, ch = cell
            label = _LABEL if ch > 3 * _LABEL else 0
            inner = (cx + _PAD, cy + _PAD + label, max(0.0, cw - 2 * _PAD), max(0.0, ch - 2 * _PAD - label))
            _layout([by_name[c] for c in hive.children], inner, by_name, out)


def _centre(box: Box) -> tuple[float, float]:
    x, y, w, h = box
    return x + w / 2, y + h / 2


def _fit(text: str, width: float, size: int) -> str:
    room = max(1, int(width / (size * 0.6)))
    return text if len(text) <= room else text[: max(1, room - 1)] + "…"
