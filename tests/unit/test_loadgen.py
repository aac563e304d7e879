"""The load generator's script (samples/loadgen.yaml), run locally against a local HTTP server: a break of 2 s
costs about 2 s * RATE counted failures whether the server refuses connections or holds requests and drops them,
nothing is retried, failures before any answer are counted apart, and it prints a complete final line on SIGTERM
and at MAX_SECONDS."""
from __future__ import annotations

import pytest

from .loadgen_harness import FlakyServer, Generator, free_port, run_with_break, script
from .polling import wait_until

RATE = 10  # requests/s: light on the CPU, and 20 failures for a 2 s break
BREAK_S = 2.0
EXPECTED = RATE * BREAK_S
TOLERANCE = 0.25  # of EXPECTED: the break's edges fall between requests, and the machine may be loaded


@pytest.mark.parametrize("mode, kinds", [("refused", {"connect refused", "reset", "closed"}),
                                         ("hang", {"closed", "reset"})])
def test_a_break_costs_its_length_times_the_rate(tmp_path, mode, kinds):
    final, _, server, _ = run_with_break(script(), tmp_path, mode, RATE, BREAK_S, before=15, after=15)
    assert final is not None, "no final line after SIGTERM"
    assert abs(final["failures"] - EXPECTED) <= EXPECTED * TOLERANCE, \
        f"a {BREAK_S} s break at {RATE}/s must cost about {EXPECTED:g} failures, counted {final['failures']}: {final}"
    assert set(final["failure_kinds"]) <= kinds, final["failure_kinds"]
    assert final["warmup_failures"] == 0 and final["dropped"] == 0, final
    assert "retries" not in final and "dns_retries" not in final
    assert final["requests"] == final["ok"] + final["failures"], "every request sent is counted once"
    assert sum(f for _, f in final["per_second"]) == final["failures"]
    assert sum(ok for ok, _ in final["per_second"]) == final["ok"] == server.answers
    assert final["stopped_by"] == "SIGTERM" and final["in_flight"] == 0
    assert final["clients_peak"] >= 4 and final["keepalive_reuses"] > 0
    assert final["first_failure_s"] is not None and final["last_failure_s"] - final["first_failure_s"] <= BREAK_S + 0.5
    assert len(final["failure_log"]) == final["failures"] and {f[1] for f in final["failure_log"]} <= kinds
    if mode == "hang":  # the held requests each wait on a client of their own
        assert final["clients_peak"] >= EXPECTED * (1 - TOLERANCE), final["clients_peak"]


def test_failures_before_the_first_answer_are_counted_apart(tmp_path):
    port = free_port()
    gen = Generator(script(), tmp_path, port, RATE=str(RATE), MAX_SECONDS="120", LINGER_S="30")
    server = None
    try:
        wait_until(lambda: any(s["warmup_failures"] >= 5 for s in gen.lines), 10, "warm-up failures")
        server = FlakyServer("refused", down_after=10 ** 6, down_for=0, port=port)
        wait_until(lambda: server.answers >= 10, 10, "10 answers")
        final = gen.terminate()
    finally:
        gen.kill()
        if server is not None:
            server.close()
    assert final["failures"] == 0 and final["warmup_failures"] >= 5, final
    assert set(final["warmup_errors"]) and all(k.startswith("connect refused") for k in final["warmup_errors"])
    assert final["first_answer_s"] is not None and final["answers"] == {"v1 from local": final["ok"]}


def test_it_stops_by_itself_after_max_seconds(tmp_path):
    server = FlakyServer("refused", down_after=10 ** 6, down_for=0)
    gen = Generator(script(), tmp_path, server.port, RATE=str(RATE), MAX_SECONDS="1.5")
    try:
        assert gen.proc.wait(15) == 0, gen.proc.stderr.read()
        wait_until(lambda: gen.final() is not None, 5, "the final line")
    finally:
        gen.kill()
        server.close()
    final = gen.final()
    assert final["stopped_by"] == "MAX_SECONDS" and final["failures"] == 0
    assert final["requests"] == RATE * 1.5 and len(final["per_second"]) == 2
    assert final["p50_ms"] is not None and final["max_ms"] >= final["p99_ms"] >= final["p50_ms"]
