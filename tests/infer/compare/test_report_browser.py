"""report.html in a real headless browser, at a desktop width (1400 px) and a phone's (420 px): nothing overflows
the page sideways, no script or resource error, every plot loads. Screenshots go to the test's temporary folder
(INFER_REPORT_SCREENSHOTS=DIR keeps them there), never into the repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from infer.compare._compare import CompareOptions, compare
from infer.compare._reports.report_html import write_report_html
from infer.contract import ModelContract
from infer.convert import ConvertOptions, convert_model
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_normalised
from tests.infer.compare.browser import chromium, look
from tests.infer.compare.test_plain_verdict import x_bins

pytestmark = pytest.mark.slow


def _needs_chromium() -> None:
    if chromium() is None:
        if os.environ.get("INFER_TESTS_NEED_CHROMIUM"):
            pytest.fail("INFER_TESTS_NEED_CHROMIUM is set but chromium is not on PATH (.ci/run installs it)")
        pytest.skip("no chromium on PATH (apt-get install chromium; CI installs it)")


@pytest.fixture(scope="module")
def reports(perturbed_small_cnn: ModelContract, onnx_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A passing comparison, a failing layer-wise one (a damaged kernel), and a layer-wise one whose tensors
    overflow fp16 (inf from the first op on: x / sqrt(sum(x*x)) with |x| near 300), each written as report.html."""
    _needs_chromium()
    folder = tmp_path_factory.mktemp("browser_reports")
    written = {}
    for name, contract, options in (("passing", onnx_small_cnn, CompareOptions()),
                                    ("failing", perturbed_small_cnn, CompareOptions(layerwise=True))):
        actual = run_model(contract.path, cnn_bins, folder / name / "out", RunOptions(backend="onnxrt")).folder
        result = compare(contract.path, cnn_bins, actual, golden=cnn_golden, options=options)
        assert result.passed == (name == "passing")
        written[name] = write_report_html(result, folder / name)
    frozen = write_frozen(folder / "overflow" / "model", build_normalised, ("x:0",), ("out:0",))
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp16")).contract
    bins = x_bins(folder / "overflow" / "bins", 2)
    actual = run_model(contract.path, bins, folder / "overflow" / "out", RunOptions(backend="onnxrt")).folder
    result = compare(contract.path, bins, actual, options=CompareOptions(layerwise=True))
    assert result.layerwise is not None and result.layerwise.nonfinite is not None
    written["overflow"] = write_report_html(result, folder / "overflow")
    return written


@pytest.mark.parametrize("width", [1400, 420])
@pytest.mark.parametrize("name", ["passing", "failing", "overflow"])
def test_the_report_fits_the_window_and_loads_cleanly(reports: dict[str, Path], name: str, width: int,
                                                      tmp_path: Path) -> None:
    shots = Path(os.environ.get("INFER_REPORT_SCREENSHOTS", tmp_path))
    seen = look(reports[name], width, 2400, tmp_path / "browser", screenshot=shots / f"report-{name}-{width}.png")
    assert seen.viewport == width
    assert not seen.overflows, f"{name} at {width}px: the page is {seen.scroll_width}px wide (widest {seen.widest})"
    assert seen.errors == () and seen.console == ()
    assert seen.broken_images == 0


def _inside(item: dict[str, Any], box: dict[str, Any], slack: float = 2.0) -> bool:
    return (item["left"] >= box["left"] - slack and item["right"] <= box["right"] + slack
            and item["top"] >= box["top"] - slack and item["bottom"] <= box["bottom"] + slack)


@pytest.mark.parametrize("width", [1400, 420])
def test_the_error_plot_draws_the_tensors_that_failed(reports: dict[str, Path], width: int, tmp_path: Path) -> None:
    """inf/NaN tensors, which a log scale cannot place, are drawn as markers on the plot's top edge and labelled;
    the first to diverge is starred and named on the plot; the x axis names the tensors. Looked at where the
    browser lays them out."""
    seen = look(reports["overflow"], width, 2400, tmp_path / "browser")
    items = seen.items
    axes = items["plot-axes"]
    inf_nan = items["plot-nonfinite"]  # three markers: square:0, energy:0, norm:0
    assert inf_nan["top"] < axes["top"] < inf_nan["bottom"], (inf_nan, axes)  # on the top edge
    assert inf_nan["right"] - inf_nan["left"] > (axes["right"] - axes["left"]) / 3  # along it, not one point
    assert items["plot-nonfinite-label"]["text"] == "inf/NaN from square:0"
    assert _inside(items["plot-nonfinite-label"], axes)
    star = items["plot-first"]
    assert star["top"] < axes["top"] < star["bottom"]  # square:0's RED is inf: its star is on the edge too
    assert items["plot-first-label"]["text"] == "first to diverge: square:0"
    assert _inside(items["plot-first-label"], axes)
    ticks = sorted((key for key in items if key.startswith("plot-xtick-")), key=lambda k: int(k.rsplit("-", 1)[1]))
    assert [items[key]["text"] for key in ticks] == ["square:0", "energy:0", "norm:0", "out:0"]
    assert all(items[key]["top"] >= axes["bottom"] for key in ticks)  # under the axes, in graph order
    assert [items[key]["left"] for key in ticks] == sorted(items[key]["left"] for key in ticks)


def test_the_probe_sees_an_overflowing_page(tmp_path: Path) -> None:
    """The check can fail: a page with a table wider than the window is caught at 420 px."""
    _needs_chromium()
    page = tmp_path / "wide.html"
    page.write_text("<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'></head><body>"
                    "<table><tr>" + "<td>wide&nbsp;cell&nbsp;content</td>" * 40 + "</tr></table>"
                    "<script>nosuchfunction()</script></body></html>")
    seen = look(page, 420, 800, tmp_path / "browser")
    assert seen.overflows and any("nosuchfunction" in e for e in seen.errors)
