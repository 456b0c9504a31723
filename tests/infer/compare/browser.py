"""A page looked at in a real headless browser (the distribution's Chromium): how wide it lays out at a window
width, what its scripts and resources complained of, and a screenshot. No browser driver: the page (with an error
recorder put first in its head) is shown in a frame of the asked width, since headless Chromium keeps its window
500 px wide at least, and a probe in the page around it writes what it measured into the DOM that `--dump-dom`
prints."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--virtual-time-budget=10000", "--allow-file-access-from-files")
_RECORDER = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  window.__errors.push(e.message || ('could not load ' + ((e.target && (e.target.src || e.target.href)) || '?')));
}, true);
var __error = console.error;
console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, ' ')); __error.apply(console, arguments); };
</script>"""
_FRAME = """<!DOCTYPE html><html><head><style>body {{ margin: 0; }}</style></head><body>
<iframe id="page" src="{page}" style="width: {width}px; height: {height}px; border: 0; display: block"></iframe>
<script>
window.addEventListener('load', function () {{
  var frame = document.getElementById('page'), view = frame.contentWindow, doc = frame.contentDocument;
  var widest = 0;  // the right edge of what shows: inside a box that scrolls or clips, the box's own edge counts
  function clipped(el) {{
    for (var up = el.parentElement; up && up !== doc.body; up = up.parentElement) {{
      if (view.getComputedStyle(up).overflowX !== 'visible') return true; }}
    return false; }}
  doc.querySelectorAll('body *').forEach(function (el) {{
    if (clipped(el)) return;
    var r = el.getBoundingClientRect(); if (r.right > widest) widest = r.right; }});
  var broken = Array.prototype.filter.call(doc.images, function (i) {{ return !i.complete || !i.naturalWidth; }});
  var items = {{}};  // the parts of a plot the report names (id plot-...): where they are drawn, and their text
  doc.querySelectorAll('[id^="plot-"]').forEach(function (el) {{
    var r = el.getBoundingClientRect();
    items[el.id] = {{top: r.top, bottom: r.bottom, left: r.left, right: r.right, text: el.textContent.trim()}}; }});
  document.body.setAttribute('data-probe', JSON.stringify({{
    scroll_width: doc.documentElement.scrollWidth, viewport: view.innerWidth, widest: widest,
    broken_images: broken.length, items: items, errors: view.__errors || ['the error recorder did not run']}}));
}});
</script></body></html>"""


def chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


@dataclass(frozen=True)
class Look:
    scroll_width: int
    viewport: int
    widest: float
    broken_images: int
    errors: tuple[str, ...]
    console: tuple[str, ...]  # what the browser logged at error level for the page
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # id plot-...: its box (px) and its text

    @property
    def overflows(self) -> bool:
        return self.scroll_width > self.viewport or self.widest > self.viewport + 0.5


def look(page: Path, width: int, height: int, work: Path, screenshot: Path | None = None) -> Look:
    """Shows `page` (a copy with the error recorder in it) in a frame `width` x `height` and reports what the
    probe found; a screenshot of it where asked."""
    browser = chromium()
    assert browser is not None, "no chromium on PATH"
    work.mkdir(parents=True, exist_ok=True)
    recorded = work / f"page-{width}.html"
    recorded.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + _RECORDER, 1),
                        encoding="utf-8")
    frame = work / f"frame-{width}.html"
    frame.write_text(_FRAME.format(page=recorded.name, width=width, height=height), encoding="utf-8")
    env = {**os.environ, "HOME": str(work)}
    argv = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={work / f'profile-{width}'}",
            f"--window-size={max(width, 500)},{height}", "--enable-logging=stderr", "--v=0"]
    dumped = subprocess.run([*argv, "--dump-dom", frame.as_uri()], capture_output=True, text=True, timeout=120,
                            env=env)
    match = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert match, f"the probe did not run: {dumped.stderr[-2000:]}"
    found = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    console = tuple(line for line in dumped.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper())
    if screenshot is not None:
        subprocess.run([*argv, f"--screenshot={screenshot}", frame.as_uri()], capture_output=True, timeout=120,
                       env=env)
    return Look(scroll_width=int(found["scroll_width"]), viewport=int(found["viewport"]),
                widest=float(found["widest"]), broken_images=int(found["broken_images"]),
                errors=tuple(found["errors"]), console=console, items=dict(found.get("items", {})))
