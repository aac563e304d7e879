"""Plain-JSON access to the Kubernetes API through the official client's REST layer.

The agent works on API objects as dicts (camelCase, exactly as the API serves them); this wrapper gives
get/list/watch/create/patch/delete over paths and raises `ApiError` with the HTTP status.
"""
from __future__ import annotations

import json
import logging
import urllib.parse
from pathlib import Path
from typing import Iterator

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

log = logging.getLogger("nodeagent.kube")

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


class ApiError(RuntimeError):
    def __init__(self, status: int, body: str, what: str):
        self.status = status
        self.body = body
        try:
            self.reason = json.loads(body).get("reason", "")
            msg = json.loads(body).get("message", body)
        except (ValueError, AttributeError):
            self.reason, msg = "", body
        super().__init__(f"{what}: HTTP {status}: {msg[:300]}")


class Kube:
    def __init__(self, kubeconfig: Path, pool: int = 64):
        cfg = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = pool
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.rest = k8s_client.rest.RESTClientObject(cfg)

    # -- low level ---------------------------------------------------------------------------------------
    def _url(self, path: str, query: dict | None) -> str:
        q = {k: ("true" if v is True else "false" if v is False else v) for k, v in (query or {}).items()
             if v is not None}
        return self.host + path + (("?" + urllib.parse.urlencode(q)) if q else "")

    def request(self, method: str, path: str, body=None, query: dict | None = None,
                content_type: str = "application/json", timeout: float | tuple = 30):
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        r = self.rest.request(method, self._url(path, query), headers=headers, body=body, _request_timeout=timeout)
        data = r.read()
        if r.status >= 300:
            raise ApiError(r.status, data.decode(errors="replace"), f"{method} {path}")
        return json.loads(data) if data else {}

    def get(self, path: str, query: dict | None = None):
        return self.request("GET", path, query=query)

    def get_or_none(self, path: str):
        try:
            return self.get(path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def create(self, path: str, body: dict, query: dict | None = None):
        return self.request("POST", path, body=body, query=query)

    def patch(self, path: str, body, content_type: str = SMP):
        return self.request("PATCH", path, body=body, content_type=content_type)

    def put(self, path: str, body: dict):
        return self.request("PUT", path, body=body)

    def delete(self, path: str, body: dict | None = None):
        return self.request("DELETE", path, body=body)

    def watch(self, path: str, query: dict, resource_version: str, timeout: int = 300) -> Iterator[dict]:
        """Yield watch events ({type, object}) until the server ends the watch (or raise ApiError)."""
        q = dict(query, watch="true", resourceVersion=resource_version, allowWatchBookmarks="true",
                 timeoutSeconds=str(timeout))
        r = self.rest.request("GET", self._url(path, q), headers={"Accept": "application/json"},
                              _request_timeout=(10, timeout + 30))
        if r.status != 200:
            raise ApiError(r.status, r.read().decode(errors="replace"), f"WATCH {path}")
        buf = b""
        try:
            for chunk in r.response.stream(amt=None, decode_content=False):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            r.response.release_conn()


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    p = f"/api/v1/namespaces/{namespace}/pods"
    if name:
        p += f"/{name}"
    if sub:
        p += f"/{sub}"
    return p
