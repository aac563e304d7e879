"""The project's fake device plugin (GPUs, TPUs: any extended resource) and the device-plugin API it speaks.

`python -m rayconformance.clusters.deviceplugin --resource nvidia.com/gpu --count 4` advertises four fake devices to the
kubelet of its node (on kind: a DaemonSet; on the local test bed: a process per node and resource, registering with
the node agent's device manager); `--resource google.com/tpu` serves fake TPU chips the same way. The package
imports only itself, grpcio and protobuf, so it also runs from a ConfigMap mounted into the Ray image as the
top-level package `deviceplugin`.
"""
