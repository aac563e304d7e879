"""Ray's HTTP APIs as testing/ray.py reaches them (through the apiserver's services/proxy, over httpx as the
ApiClient is configured), against a local HTTP server standing in for the apiserver: the status and body of every
answer (errors too), (0, why) when no answer comes, the headers and the bearer token sent."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from rayconformance.testing import ray
from rayconformance.kube import httpclient

PROXY = "/api/v1/namespaces/ns/services/svc:dashboard/proxy"


class Apiserver(BaseHTTPRequestHandler):
    """Answers `<PROXY>/status/<code>` with that code and a body naming it; `<PROXY>/slow` after 2 s."""
    seen: list[dict] = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        Apiserver.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                               "body": self.rfile.read(length).decode() if length else None})
        if self.path.endswith("/slow"):
            time.sleep(2)
        code = int(self.path.rsplit("/", 1)[-1]) if "/status/" in self.path else 200
        data = json.dumps({"answered": code}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    """Its handler threads are joined when it closes, and a client gone before its answer (the timeout test's) is
    not printed: nothing of a test's server reaches a later test's stderr."""
    daemon_threads, block_on_close = False, True

    def handle_error(self, request, client_address):
        pass


@pytest.fixture
def server():
    Apiserver.seen = []
    srv = Server(("127.0.0.1", 0), Apiserver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def api_for():
    """ApiClients for a host with a bearer token (their httpx clients closed after the test)."""
    made = []

    def make(host: str, token: str = "k8s-token") -> client.ApiClient:
        c = client.Configuration()
        c.host, c.proxy = host, None
        c.api_key, c.api_key_prefix = {"authorization": token}, {"authorization": "Bearer"}
        made.append(c)
        return client.ApiClient(c)

    yield make
    for c in made:
        httpclient.close(c)


def test_an_answer_is_its_status_and_body(server, api_for):
    api = api_for(server)
    assert ray.proxy_get(api, "ns", "svc", "dashboard", "status/200") == (200, '{"answered": 200}')
    assert Apiserver.seen[-1]["method"] == "GET" and Apiserver.seen[-1]["path"] == f"{PROXY}/status/200"


@pytest.mark.parametrize("code", [404, 503])
def test_an_error_status_is_an_answer_not_an_exception(server, api_for, code):
    assert ray.proxy_get(api_for(server), "ns", "svc", "dashboard", f"status/{code}") == \
        (code, json.dumps({"answered": code}))


def test_a_post_sends_its_json_body(server, api_for):
    code, _ = ray.proxy_post(api_for(server), "ns", "svc", "dashboard", "api/jobs/", {"entrypoint": "echo hi"})
    got = Apiserver.seen[-1]
    assert (code, got["method"], got["path"]) == (200, "POST", f"{PROXY}/api/jobs/")
    assert json.loads(got["body"]) == {"entrypoint": "echo hi"}
    assert got["headers"]["Content-Type"] == "application/json" and got["headers"]["Accept"] == "*/*"


def test_extra_headers_go_beside_the_apiservers_bearer_token(server, api_for):
    api = api_for(server)
    assert ray.proxy_get(api, "ns", "svc", "dashboard", "nodes?view=summary", headers=ray.auth_headers("t"))[0] == 200
    got = Apiserver.seen[-1]
    assert got["path"] == f"{PROXY}/nodes?view=summary"
    assert got["headers"]["X-Ray-Authorization"] == "Bearer t"
    assert got["headers"]["authorization"] == "Bearer k8s-token"
    ray.proxy_get(api, "ns", "svc", "dashboard", "nodes")
    assert "X-Ray-Authorization" not in Apiserver.seen[-1]["headers"]


def test_the_token_is_the_one_the_kubernetes_client_refreshes(server, api_for):
    """A kubeconfig's exec plugin refreshes the token through the Configuration's hook: each request asks it."""
    api = api_for(server, token="old")
    tokens = iter(["first", "second"])
    api.configuration.refresh_api_key_hook = lambda conf: conf.api_key.update(authorization=next(tokens))
    ray.proxy_get(api, "ns", "svc", "dashboard", "nodes")
    ray.proxy_get(api, "ns", "svc", "dashboard", "nodes")
    assert [s["headers"]["authorization"] for s in Apiserver.seen] == ["Bearer first", "Bearer second"]


def test_one_client_per_configuration_until_closed(server, api_for):
    api = api_for(server)
    first = httpclient.client(api.configuration)
    assert httpclient.client(api.configuration) is first
    assert httpclient.client(api_for(server).configuration) is not first
    httpclient.close(api.configuration)
    assert first.is_closed and httpclient.client(api.configuration) is not first
    assert ray.proxy_get(api, "ns", "svc", "dashboard", "status/200")[0] == 200


def test_a_refused_connection_is_not_yet(api_for):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = api_for(f"http://127.0.0.1:{port}")
    api.configuration.retries = 0
    code, why = ray.proxy_get(api, "ns", "svc", "dashboard", "nodes")
    assert code == 0 and why.startswith("ConnectError: "), why


def test_a_timeout_is_not_yet(server, api_for):
    started = time.monotonic()
    code, why = ray.proxy_get(api_for(server), "ns", "svc", "dashboard", "slow", timeout=0.3)
    assert code == 0 and why.startswith("ReadTimeout"), why
    assert time.monotonic() - started < 1.5, "the request outlived its timeout"


COLLECTED_WHILE_MAKING = """
import gc, os, threading
from kubernetes import client
from rayconformance.kube import httpclient

old = client.Configuration()
old.host = "http://127.0.0.1:9"
old.cycle = old  # collected only by the cycle collector, whenever an allocation triggers it
httpclient.client(old)
del old
made = httpclient._new_client
httpclient._new_client = lambda c: (gc.collect(), made(c))[1]  # as an allocation in _new_client may trigger it
new = client.Configuration()
new.host = "http://127.0.0.1:9"
done = threading.Event()
threading.Thread(target=lambda: (httpclient.client(new), done.set()), daemon=True).start()
print("made" if done.wait(10) else "deadlocked", flush=True)
os._exit(0)  # a deadlocked thread holds the lock the exit's finalizers take
"""


def test_a_configuration_collected_while_another_client_is_made_does_not_deadlock():
    """The garbage collector may run inside `client()` while it holds its lock (making a client allocates much) and
    collect another Configuration whose client is cached: its finalizer drops that client in the same thread. (In
    a process of its own: a deadlock there would hang every later use of the cache.)"""
    r = subprocess.run([sys.executable, "-c", COLLECTED_WHILE_MAKING], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "made", (r.stdout, r.stderr[-2000:])


def test_a_request_that_cannot_be_made_is_no_answer_not_an_exception(api_for):
    """A URL httpx refuses (httpx.InvalidURL is no HTTPError) is `(0, why)` as the kubernetes client's path was."""
    status, why = ray.proxy_get(api_for("http://127.0.0.1:1"), "ns", "svc", "dashboard", "bad\x00path")
    assert status == 0 and why, why
