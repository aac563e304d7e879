"""The fake device plugin: advertises --count devices of --resource (any extended resource) to the kubelet until
SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import logging
import signal
import sys

from . import api
from .plugin import FakeDevicePlugin, check_resource, node_name


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="deviceplugin", description=__doc__)
    p.add_argument("--resource", default="nvidia.com/gpu",
                   help="extended resource name, <domain>/<name> (default: nvidia.com/gpu)")
    p.add_argument("--count", type=int, default=4, help="number of fake devices (default: 4)")
    p.add_argument("--node-name", default=None, help="used in device IDs (default: $NODE_NAME or the hostname)")
    p.add_argument("--plugin-dir", default=api.DEVICE_PLUGIN_PATH, help="where the plugin's socket goes")
    p.add_argument("--kubelet-socket", default=None, help="the kubelet's Registration socket "
                                                           "(default: <plugin-dir>/kubelet.sock)")
    p.add_argument("--env", default=None,
                   help="the variable Allocate sets to the device IDs (default: NVIDIA_VISIBLE_DEVICES for "
                        "nvidia.com/gpu, else <NAME>_VISIBLE_DEVICES)")
    p.add_argument("--id-prefix", default=None, help="device IDs are <prefix>-fake-<node>-<i> (default: the "
                                                     "resource's name upper-cased: GPU, TPU, ...)")
    p.add_argument("--poll-interval", type=float, default=1.0, help="seconds between kubelet-socket checks")
    a = p.parse_args(argv)
    try:
        check_resource(a.resource)
    except ValueError as e:
        p.error(str(e))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s deviceplugin %(message)s")
    plugin = FakeDevicePlugin(a.resource, a.count, a.node_name or node_name(), a.plugin_dir,
                              kubelet_socket=a.kubelet_socket, poll_seconds=a.poll_interval, env=a.env,
                              id_prefix=a.id_prefix)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: plugin.request_stop())
    plugin.start()
    plugin.wait()
    plugin.stop()
    if plugin.error is not None:
        sys.exit(1)


if __name__ == "__main__":
    main()
