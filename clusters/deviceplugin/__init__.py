"""The project's fake GPU device plugin and the device-plugin API it speaks.

`python -m rayconformance.clusters.deviceplugin --resource nvidia.com/gpu --count 4` advertises four fake devices to the
kubelet of its node (on kind: a DaemonSet; on the local test bed: a process per GPU node, registering with the
node agent's device manager). The package imports only itself, grpcio and protobuf, so it also runs from a
ConfigMap mounted into the Ray image as the top-level package `deviceplugin`.
"""
