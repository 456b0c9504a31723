"""report.html in a real headless browser, at a desktop width (1400 px) and a phone's (420 px): nothing overflows
the page sideways, no script or resource error, every plot loads. Screenshots go to the test's temporary folder
(INFER_REPORT_SCREENSHOTS=DIR keeps them there), never into the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infer.compare._compare import CompareOptions, compare
from infer.compare._reports.report_html import write_report_html
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import RunOptions
from tests.infer.compare.browser import chromium, look

pytestmark = pytest.mark.slow


def _needs_chromium() -> None:
    if chromium() is None:
        if os.environ.get("INFER_TESTS_NEED_CHROMIUM"):
            pytest.fail("INFER_TESTS_NEED_CHROMIUM is set but chromium is not on PATH (.ci/run installs it)")
        pytest.skip("no chromium on PATH (apt-get install chromium; CI installs it)")


@pytest.fixture(scope="module")
def reports(perturbed_small_cnn: ModelContract, onnx_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A passing comparison and a failing layer-wise one (a damaged kernel), each written as report.html."""
    _needs_chromium()
    folder = tmp_path_factory.mktemp("browser_reports")
    written = {}
    for name, contract, options in (("passing", onnx_small_cnn, CompareOptions()),
                                    ("failing", perturbed_small_cnn, CompareOptions(layerwise=True))):
        actual = run_model(contract.path, cnn_bins, folder / name / "out", RunOptions(backend="onnxrt")).folder
        result = compare(contract.path, cnn_bins, actual, golden=cnn_golden, options=options)
        assert result.passed == (name == "passing")
        written[name] = write_report_html(result, folder / name)
    return written


@pytest.mark.parametrize("width", [1400, 420])
@pytest.mark.parametrize("name", ["passing", "failing"])
def test_the_report_fits_the_window_and_loads_cleanly(reports: dict[str, Path], name: str, width: int,
                                                      tmp_path: Path) -> None:
    shots = Path(os.environ.get("INFER_REPORT_SCREENSHOTS", tmp_path))
    seen = look(reports[name], width, 2400, tmp_path / "browser", screenshot=shots / f"report-{name}-{width}.png")
    assert seen.viewport == width
    assert not seen.overflows, f"{name} at {width}px: the page is {seen.scroll_width}px wide (widest {seen.widest})"
    assert seen.errors == () and seen.console == ()
    assert seen.broken_images == 0


def test_the_probe_sees_an_overflowing_page(tmp_path: Path) -> None:
    """The check can fail: a page with a table wider than the window is caught at 420 px."""
    _needs_chromium()
    page = tmp_path / "wide.html"
    page.write_text("<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'></head><body>"
                    "<table><tr>" + "<td>wide&nbsp;cell&nbsp;content</td>" * 40 + "</tr></table>"
                    "<script>nosuchfunction()</script></body></html>")
    seen = look(page, 420, 800, tmp_path / "browser")
    assert seen.overflows and any("nosuchfunction" in e for e in seen.errors)
