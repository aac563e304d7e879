"""The kubelet side of the device-plugin API (v1beta1) for one node of the local test bed.

A `DeviceManager` serves `Registration` on `<plugin dir>/kubelet.sock`. Each plugin that registers gets an
endpoint: a channel to the plugin's socket and a thread consuming ListAndWatch, so the manager always knows the
device IDs and their health. `allocate()` picks free healthy IDs (asking GetPreferredAllocation when the plugin
offers it), calls Allocate and returns the env from the plugin's answer; allocations are kept in a JSON file so
a restarted node agent neither loses nor hands out twice a device that a running container holds.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Callable, Iterable

import grpc

from rayconformance.clusters.deviceplugin import api

log = logging.getLogger("devices")

RPC_TIMEOUT_SECONDS = 10
CONNECT_TIMEOUT_SECONDS = 10
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


class DeviceError(RuntimeError):
    """The device manager cannot do what was asked; the message says why."""


class AllocationError(DeviceError):
    """Not enough free healthy devices, no plugin for the resource, or the plugin refused the allocation."""


class _Endpoint:
    """One registered plugin: its channel, its ListAndWatch thread and the devices it last reported."""

    def __init__(self, resource: str, socket: Path, options):
        self.resource, self.socket, self.options = resource, socket, options
        self.channel = grpc.insecure_channel(api.target(socket))
        self.stub = api.Stub(self.channel, "DevicePlugin")
        self.devices: dict[str, str] = {}  # id -> health, in the plugin's order
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()
        self.channel.close()  # cancels the ListAndWatch stream


class DeviceManager:
    """Device plugins of one node: capacity, allocation and release of devices to Pods' containers."""

    def __init__(self, node: str, plugin_dir, state_file=None,
                 on_change: Callable[[dict[str, int]], None] | None = None):
        self.node = node
        self.plugin_dir = Path(plugin_dir)
        self.socket = self.plugin_dir / api.KUBELET_SOCKET
        self.state_file = Path(state_file) if state_file else self.plugin_dir / "allocations.json"
        self.on_change = on_change
        if len(str(self.socket.resolve())) > MAX_SOCKET_PATH:
            raise DeviceError(f"device-plugin socket path {self.socket} is longer than {MAX_SOCKET_PATH} bytes; "
                              "use a shorter state directory")
        self._lock = threading.RLock()  # endpoints, devices, allocations
        self._alloc_lock = threading.Lock()  # one allocation at a time, across its RPCs
        self._notify_lock = threading.Lock()
        self._endpoints: dict[str, _Endpoint] = {}  # resource -> its current plugin
        self._threads: list[threading.Thread] = []  # ListAndWatch threads, including replaced endpoints'
        self._allocations: dict = self._load()  # pod uid -> container -> resource -> {"ids": [...], "envs": {...}}
        self._reported: dict[str, int] | None = None
        self._server = self._executor = None

    # --- lifecycle

    def start(self) -> None:
        """Serve Registration. Like a kubelet, first remove the sockets left in the directory: plugins see
        that as the signal to serve again and re-register."""
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        for p in self.plugin_dir.iterdir():
            if p.is_socket():
                p.unlink()
        self._executor = futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"devices-{self.node}-rpc")
        self._server = grpc.server(self._executor)
        self._server.add_generic_rpc_handlers((api.handler("Registration", self),))
        self._server.add_insecure_port(api.target(self.socket))
        self._server.start()
        log.info("node %s: device-plugin registration on %s", self.node, self.socket)

    def stop(self) -> None:
        """Stop serving and watching; allocations stay in the state file. Safe to call twice."""
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._executor.shutdown(wait=True)
            self._server = self._executor = None
        with self._lock:
            endpoints, self._endpoints = list(self._endpoints.values()), {}
        for ep in endpoints:
            ep.close()
        with self._lock:
            threads, self._threads = self._threads, []
        for t in threads:
            t.join()
        if self.socket.exists():
            self.socket.unlink()

    # --- what the node agent asks

    def capacity(self) -> dict[str, int]:
        """Healthy devices per resource, for every resource a plugin has registered (0 once its plugin is gone)."""
        with self._lock:
            return {r: sum(h == api.HEALTHY for h in ep.devices.values()) for r, ep in self._endpoints.items()}

    def devices(self, resource: str) -> dict[str, str]:
        """Device ID -> health, as the plugin for `resource` last reported."""
        with self._lock:
            ep = self._endpoints.get(resource)
            return dict(ep.devices) if ep else {}

    def allocated(self, pod_uid: str) -> dict[str, dict[str, list[str]]]:
        """Container -> resource -> device IDs held by one Pod."""
        with self._lock:
            return {c: {r: list(a["ids"]) for r, a in by_res.items()}
                    for c, by_res in self._allocations.get(pod_uid, {}).items()}

    def allocate(self, pod_uid: str, container: str, resource: str, n: int) -> dict[str, str]:
        """Give `n` devices of `resource` to a container and return the env the plugin wants it to have.

        Asking again for the same Pod, container and resource returns the same answer (a restarted agent
        re-admitting a running Pod); `n == 0` allocates nothing.
        """
        if n < 0:
            raise ValueError(f"cannot allocate {n} devices")
        if n == 0:
            return {}
        with self._alloc_lock:
            with self._lock:
                held = self._allocations.get(pod_uid, {}).get(container, {}).get(resource)
                if held is not None:
                    return dict(held["envs"])
                ep = self._endpoints.get(resource)
                in_use = self._in_use(resource)
                free = [d for d, h in (ep.devices.items() if ep else ()) if h == api.HEALTHY and d not in in_use]
            if ep is None:
                raise AllocationError(f"no device plugin for {resource} has registered on node {self.node}")
            if ep.closed.is_set():
                raise AllocationError(f"the device plugin for {resource} on node {self.node} has gone away; "
                                      "waiting for it to register again")
            if len(free) < n:
                raise AllocationError(f"requested number of devices unavailable for {resource}. "
                                      f"Requested: {n}, Available: {len(free)}")
            ids = self._choose(ep, free, n)
            try:
                reply = ep.stub.Allocate(api.msg.AllocateRequest(container_requests=[
                    api.msg.ContainerAllocateRequest(devices_ids=ids)]), timeout=RPC_TIMEOUT_SECONDS)
            except grpc.RpcError as e:
                raise AllocationError(f"device plugin for {resource} refused {', '.join(ids)}: "
                                      f"{e.code().name} {e.details()}") from None
            if len(reply.container_responses) != 1:
                raise AllocationError(f"device plugin for {resource} answered Allocate with "
                                      f"{len(reply.container_responses)} container responses, expected 1")
            envs = dict(reply.container_responses[0].envs)
            with self._lock:
                self._allocations.setdefault(pod_uid, {}).setdefault(container, {})[resource] = \
                    {"ids": ids, "envs": envs}
                self._save()
            return dict(envs)

    def release(self, pod_uid: str) -> None:
        """Return all devices a Pod holds."""
        with self._lock:
            if self._allocations.pop(pod_uid, None) is not None:
                self._save()

    def retain(self, pod_uids: Iterable[str]) -> None:
        """Release the devices of every Pod not in `pod_uids` (the Pods still bound to this node)."""
        keep = set(pod_uids)
        with self._lock:
            gone = [uid for uid in self._allocations if uid not in keep]
            for uid in gone:
                del self._allocations[uid]
            if gone:
                self._save()

    # --- the Registration service

    def Register(self, request, context):
        if request.version != api.VERSION:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"unsupported device-plugin API version {request.version!r}; this node speaks {api.VERSION}")
        domain, _, name = request.resource_name.partition("/")
        if not domain or not name or "/" in name:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"resource name {request.resource_name!r} is not an extended resource (<domain>/<name>)")
        if not request.endpoint or "/" in request.endpoint:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"endpoint {request.endpoint!r} is not a file name")
        ep = _Endpoint(request.resource_name, self.plugin_dir / request.endpoint, request.options)
        with self._lock:
            old = self._endpoints.get(ep.resource)
            self._endpoints[ep.resource] = ep
            if old is not None:
                ep.devices = dict(old.devices)  # the same devices until the new stream says otherwise
        if old is not None:
            old.close()
        thread = threading.Thread(target=self._watch, args=(ep,), daemon=True,
                                  name=f"devices-{self.node}-{ep.resource}")
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        log.info("node %s: plugin for %s registered at %s", self.node, ep.resource, ep.socket)
        return api.msg.Empty()

    # --- internals

    def _watch(self, ep: _Endpoint) -> None:
        try:
            self._connect(ep)
            for reply in ep.stub.ListAndWatch(api.msg.Empty()):
                with self._lock:
                    ep.devices = {d.ID: d.health for d in reply.devices}
                self._notify()
        except grpc.FutureTimeoutError:
            if not ep.closed.is_set():
                log.warning("node %s: cannot connect to the plugin for %s at %s", self.node, ep.resource, ep.socket)
        except grpc.RpcError as e:
            if not ep.closed.is_set():
                log.warning("node %s: lost the plugin for %s (%s)", self.node, ep.resource, e.code())
        finally:
            with self._lock:
                if self._endpoints.get(ep.resource) is ep:  # its devices stay known, none healthy
                    ep.devices = {d: api.UNHEALTHY for d in ep.devices}
            ep.closed.set()
            self._notify()

    def _connect(self, ep: _Endpoint) -> None:
        """Wait for the plugin's socket to answer, in short steps so that closing the endpoint ends the wait."""
        ready = grpc.channel_ready_future(ep.channel)
        for _ in range(int(CONNECT_TIMEOUT_SECONDS / 0.1)):
            if ep.closed.is_set():
                break
            try:
                ready.result(timeout=0.1)
                return
            except grpc.FutureTimeoutError:
                pass
            except grpc.FutureCancelledError:
                break
        ready.cancel()
        raise grpc.FutureTimeoutError()

    def _choose(self, ep: _Endpoint, free: list[str], n: int) -> list[str]:
        if ep.options.get_preferred_allocation_available:
            try:
                reply = ep.stub.GetPreferredAllocation(api.msg.PreferredAllocationRequest(container_requests=[
                    api.msg.ContainerPreferredAllocationRequest(available_deviceIDs=free, allocation_size=n)]),
                    timeout=RPC_TIMEOUT_SECONDS)
                preferred = list(reply.container_responses[0].deviceIDs) if reply.container_responses else []
                if len(preferred) == n and len(set(preferred)) == n and set(preferred) <= set(free):
                    return preferred
            except grpc.RpcError as e:
                log.warning("node %s: GetPreferredAllocation for %s failed (%s)", self.node, ep.resource, e.code())
        return free[:n]

    def _in_use(self, resource: str) -> set[str]:
        return {d for by_ctr in self._allocations.values() for by_res in by_ctr.values()
                for d in by_res.get(resource, {}).get("ids", ())}

    def _notify(self) -> None:
        with self._notify_lock:
            now = self.capacity()
            if now == self._reported:
                return
            self._reported = now
            if self.on_change is not None:
                try:
                    self.on_change(dict(now))
                except Exception:  # noqa: BLE001 - a failing callback must not stop the watch
                    log.exception("node %s: capacity callback failed", self.node)

    def _load(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise DeviceError(f"device allocations {self.state_file} are unreadable ({e}); "
                              f"remove it only if no Pod on node {self.node} holds a device") from None
        return data.get("allocations", {})

    def _save(self) -> None:
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_name(self.state_file.name + ".tmp")
        tmp.write_text(json.dumps({"node": self.node, "allocations": self._allocations}, indent=1, sort_keys=True))
        os.replace(tmp, self.state_file)


def plugin_command(node: str, count: int, plugin_dir, resource: str = "nvidia.com/gpu",
                   python: str = sys.executable, poll_seconds: float = 1.0) -> list[str]:
    """The command line of the fake device plugin for one node (run it from the repository root)."""
    return [python, "-m", "rayconformance.clusters.deviceplugin", "--resource", resource, "--count", str(count),
            "--node-name", node, "--plugin-dir", str(plugin_dir), "--poll-interval", str(poll_seconds)]
