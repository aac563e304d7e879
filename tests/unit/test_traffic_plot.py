"""The traffic plot (rayconformance.report.traffic_plot): the per-second series as a measurement and back, the moments
it marks, the SVG itself, and the HTML report attaching it under a traffic test's row."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from rayconformance.report import traffic_plot
from rayconformance.report.results import MEASUREMENT_PROPERTY, HtmlColumns

SVG = "{http://www.w3.org/2000/svg}"


def test_the_series_goes_to_text_and_back():
    text = traffic_plot.series_text([[20, 0], [12, 8], [0, 20]])
    assert text == "20/0 12/8 0/20"
    assert traffic_plot.parse_series(text) == [(20, 0), (12, 8), (0, 20)]
    with pytest.raises(ValueError):
        traffic_plot.parse_series("20/0 twelve")


def test_moments_are_the_measurements_named_at_s_in_time_order():
    m = {"upgrade.switched_at_s": 41.5, "upgrade.traffic_steps_at_s": [12.0, None, 20.0], "traffic.failures": 3,
         "upgrade.old_pods_deleted_at_s": None, "environment.overloaded_at_s": True, "upgrade.started_at_s": 3}
    assert traffic_plot.marks(m) == [("upgrade.started", 3.0), ("upgrade.traffic_steps 1", 12.0),
                                     ("upgrade.traffic_steps 2", 20.0), ("upgrade.switched", 41.5)]


def test_the_svg_stacks_failed_on_answered_and_draws_each_moment():
    out = traffic_plot.svg([(20, 0), (12, 8), (0, 20)], [("upgrade.switched", 1.5), ("later <x>", 99.0)])
    root = ET.fromstring(out)  # well-formed, escaped
    rects = root.findall(f"{SVG}rect")
    fills = [r.get("fill") for r in rects[1:]]  # the first is the frame
    assert fills == [traffic_plot.OK_COLOR, traffic_plot.OK_COLOR, traffic_plot.FAILED_COLOR,
                     traffic_plot.FAILED_COLOR]
    answered, failed = rects[2], rects[3]  # second 1: 12 answered, 8 failed on top of them
    assert float(failed.get("y")) + float(failed.get("height")) == pytest.approx(float(answered.get("y")), abs=0.2)
    assert [line.find(f"{SVG}title").text for line in root.findall(f"{SVG}line")] == ["upgrade.switched 1.5s"], \
        "a moment outside the series is left out"
    assert "20/s" in out and "3 s" in out


def test_plot_needs_a_series():
    assert traffic_plot.plot({"traffic.failures": 0}) is None
    assert traffic_plot.plot({"traffic.per_second": "garbage"}) is None
    assert traffic_plot.plot({"traffic.per_second": ""}) is None
    assert traffic_plot.plot({"traffic.per_second": "20/0", "upgrade.switched_at_s": 0.5}).startswith("<svg")


def report(when: str, **measurements) -> SimpleNamespace:
    return SimpleNamespace(when=when, user_properties=[(f"{MEASUREMENT_PROPERTY}.{k}", v)
                                                       for k, v in measurements.items()])


def test_the_html_report_shows_the_plot_under_a_traffic_test():
    pytest.importorskip("pytest_html")
    columns = HtmlColumns()
    traffic = report("call", **{"traffic.per_second": "20/0 19/1", "upgrade.switched_at_s": 1.0})
    columns.pytest_runtest_logreport(traffic)
    assert [e["format_type"] for e in traffic.extras] == ["html"] and traffic.extras[0]["content"].startswith("<svg")
    for other in (report("teardown", **{"traffic.per_second": "20/0"}), report("call", **{"traffic.failures": 0})):
        columns.pytest_runtest_logreport(other)
        assert not getattr(other, "extras", [])
