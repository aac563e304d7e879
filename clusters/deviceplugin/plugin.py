"""A fake device plugin: N always-present devices of one extended resource (any `<domain>/<name>`: nvidia.com/gpu,
google.com/tpu, ...), served over the v1beta1 API.

It serves `DevicePlugin` on its own socket in the plugin directory and registers with the kubelet's
`Registration` socket. A watcher re-registers whenever the kubelet socket is replaced (a kubelet restart) and
re-creates its own socket if the kubelet removed it (kubelets clear the directory when they start).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

from . import api
from .resources import check_resource, endpoint_for, env_for, id_prefix_for

log = logging.getLogger("deviceplugin")

REGISTER_TIMEOUT_SECONDS = 5
RETRY_SECONDS = 5


def _identity(path: Path):
    """What tells one incarnation of a socket file from the next (None while it is absent)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


class FakeDevicePlugin:
    """Devices `<prefix>-fake-<node>-<i>` (for nvidia.com/gpu `GPU-fake-<node>-<i>`); Allocate exports a
    container's IDs in `env` (for nvidia.com/gpu NVIDIA_VISIBLE_DEVICES; `env_for`)."""

    def __init__(self, resource: str, count: int, node: str, plugin_dir, kubelet_socket=None,
                 endpoint: str | None = None, poll_seconds: float = 1.0, env: str | None = None,
                 id_prefix: str | None = None):
        self.resource, self.node, self.poll_seconds = check_resource(resource), node, poll_seconds
        self.env = env or env_for(resource)
        prefix = id_prefix or id_prefix_for(resource)
        self.plugin_dir = Path(plugin_dir)
        self.kubelet_socket = Path(kubelet_socket or self.plugin_dir / api.KUBELET_SOCKET)
        self.endpoint = endpoint or endpoint_for(resource)
        self.socket = self.plugin_dir / self.endpoint
        self.health = {f"{prefix}-fake-{node}-{i}": api.HEALTHY for i in range(count)}
        self.error: Exception | None = None  # what stopped the watcher, if not stop()
        self._changed = threading.Condition()
        self._version = 0  # bumped when device health changes
        self._generation = 0  # bumped when the server goes away, ending its streams
        self._stop = threading.Event()
        self._server = self._executor = self._watcher = None

    # --- lifecycle

    def start(self) -> None:
        self._serve()
        self._watcher = threading.Thread(target=self._watch, name="deviceplugin-watch", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watcher:
            self._watcher.join()
        self._close_server()
        if self.socket.exists():
            self.socket.unlink()

    def request_stop(self) -> None:
        """Safe from a signal handler: `wait()` returns, then call `stop()`."""
        self._stop.set()

    def wait(self) -> None:
        while not self._stop.wait(1.0):
            pass

    def set_health(self, device_id: str, healthy: bool) -> None:
        with self._changed:
            self.health[device_id] = api.HEALTHY if healthy else api.UNHEALTHY
            self._version += 1
            self._changed.notify_all()

    def _serve(self) -> None:
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        if self.socket.exists() or self.socket.is_symlink():
            self.socket.unlink()
        self._executor = futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="deviceplugin-rpc")
        self._server = grpc.server(self._executor)
        self._server.add_generic_rpc_handlers((api.handler("DevicePlugin", self),))
        self._server.add_insecure_port(api.target(self.socket))
        self._server.start()
        log.info("serving %s (%d devices) on %s", self.resource, len(self.health), self.socket)

    def _close_server(self) -> None:
        if self._server is None:
            return
        with self._changed:
            self._generation += 1
            self._changed.notify_all()
        self._server.stop(grace=None).wait()
        self._executor.shutdown(wait=True)
        self._server = self._executor = None

    def _watch(self) -> None:
        try:
            self._watch_loop()
        except Exception as e:  # noqa: BLE001 - the process exits non-zero and is restarted
            log.exception("device plugin failed")
            self.error = e
            self._stop.set()

    def _watch_loop(self) -> None:
        registered_with, next_try = None, 0.0
        while not self._stop.is_set():
            if not self.socket.exists():
                log.info("own socket %s is gone; serving again", self.socket)
                self._close_server()
                self._serve()
                registered_with = None
            kubelet = _identity(self.kubelet_socket)
            if kubelet is None:
                registered_with = None
            elif kubelet != registered_with and time.monotonic() >= next_try:
                try:
                    self._register()
                    registered_with = kubelet
                except grpc.RpcError as e:
                    log.warning("registration with %s failed (%s); retrying", self.kubelet_socket, e.code())
                    next_try = time.monotonic() + RETRY_SECONDS
            self._stop.wait(self.poll_seconds)

    def _register(self) -> None:
        request = api.msg.RegisterRequest(version=api.VERSION, endpoint=self.endpoint, resource_name=self.resource,
                                          options=self._options())
        with grpc.insecure_channel(api.target(self.kubelet_socket)) as channel:
            api.Stub(channel, "Registration").Register(request, timeout=REGISTER_TIMEOUT_SECONDS)
        log.info("registered %s with %s", self.resource, self.kubelet_socket)

    # --- the DevicePlugin service

    def _options(self):
        return api.msg.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)

    def GetDevicePluginOptions(self, request, context):
        return self._options()

    def ListAndWatch(self, request, context):
        with self._changed:
            generation = self._generation
        while True:
            with self._changed:
                version = self._version
                devices = [api.msg.Device(ID=d, health=h) for d, h in self.health.items()]
            yield api.msg.ListAndWatchResponse(devices=devices)
            with self._changed:
                while version == self._version and generation == self._generation and context.is_active():
                    self._changed.wait(timeout=1.0)
                if generation != self._generation or not context.is_active():
                    return

    def GetPreferredAllocation(self, request, context):
        responses = []
        for r in request.container_requests:
            chosen = list(r.must_include_deviceIDs)
            available = set(r.available_deviceIDs)
            chosen += [d for d in self.health if d in available and d not in chosen]
            responses.append(api.msg.ContainerPreferredAllocationResponse(deviceIDs=chosen[:r.allocation_size]))
        return api.msg.PreferredAllocationResponse(container_responses=responses)

    def Allocate(self, request, context):
        responses = []
        for r in request.container_requests:
            unknown = [d for d in r.devices_ids if d not in self.health]
            if unknown:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"unknown {self.resource} device(s) {', '.join(unknown)} on node {self.node}")
            responses.append(api.msg.ContainerAllocateResponse(
                envs={self.env: ",".join(r.devices_ids)}))
        return api.msg.AllocateResponse(container_responses=responses)

    def PreStartContainer(self, request, context):
        return api.msg.PreStartContainerResponse()


def node_name() -> str:
    return os.environ.get("NODE_NAME") or os.uname().nodename
