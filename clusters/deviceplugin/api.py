"""The kubelet device-plugin API, v1beta1, built at import time from a table instead of generated code.

The message classes come from a FileDescriptorProto assembled here (names, types and field numbers as the
published API defines them) and turned into classes by the installed protobuf runtime; the services are plain
gRPC generic handlers and channel callables. Nothing is generated at install time, so the same source runs
with whichever protobuf (3.20 and later) and grpcio the host or the Ray image has.

Use: `api.msg.Device(ID="x", health=api.HEALTHY)`, `api.handler("DevicePlugin", servicer)`,
`api.Stub(channel, "Registration").Register(request, timeout=5)`.
"""
from __future__ import annotations

import types

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = VERSION = "v1beta1"
HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"
KUBELET_SOCKET = "kubelet.sock"
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins"

# message -> [(field, number, type)]; type is a scalar, a message name, "repeated <type>" or "map".
MESSAGES = {
    "DevicePluginOptions": [("pre_start_required", 1, "bool"), ("get_preferred_allocation_available", 2, "bool")],
    "RegisterRequest": [("version", 1, "string"), ("endpoint", 2, "string"), ("resource_name", 3, "string"),
                        ("options", 4, "DevicePluginOptions")],
    "Empty": [],
    "ListAndWatchResponse": [("devices", 1, "repeated Device")],
    "TopologyInfo": [("nodes", 1, "repeated NUMANode")],
    "NUMANode": [("ID", 1, "int64")],
    "Device": [("ID", 1, "string"), ("health", 2, "string"), ("topology", 3, "TopologyInfo")],
    "PreStartContainerRequest": [("devices_ids", 1, "repeated string")],
    "PreStartContainerResponse": [],
    "PreferredAllocationRequest": [("container_requests", 1, "repeated ContainerPreferredAllocationRequest")],
    "ContainerPreferredAllocationRequest": [("available_deviceIDs", 1, "repeated string"),
                                            ("must_include_deviceIDs", 2, "repeated string"),
                                            ("allocation_size", 3, "int32")],
    "PreferredAllocationResponse": [("container_responses", 1, "repeated ContainerPreferredAllocationResponse")],
    "ContainerPreferredAllocationResponse": [("deviceIDs", 1, "repeated string")],
    "AllocateRequest": [("container_requests", 1, "repeated ContainerAllocateRequest")],
    "ContainerAllocateRequest": [("devices_ids", 1, "repeated string")],
    "CDIDevice": [("name", 1, "string")],
    "AllocateResponse": [("container_responses", 1, "repeated ContainerAllocateResponse")],
    "ContainerAllocateResponse": [("envs", 1, "map"), ("mounts", 2, "repeated Mount"),
                                  ("devices", 3, "repeated DeviceSpec"), ("annotations", 4, "map"),
                                  ("cdi_devices", 5, "repeated CDIDevice")],
    "Mount": [("container_path", 1, "string"), ("host_path", 2, "string"), ("read_only", 3, "bool")],
    "DeviceSpec": [("container_path", 1, "string"), ("host_path", 2, "string"), ("permissions", 3, "string")],
}

# service -> method -> (request, response, server streams)
SERVICES = {
    "Registration": {"Register": ("RegisterRequest", "Empty", False)},
    "DevicePlugin": {
        "GetDevicePluginOptions": ("Empty", "DevicePluginOptions", False),
        "ListAndWatch": ("Empty", "ListAndWatchResponse", True),
        "GetPreferredAllocation": ("PreferredAllocationRequest", "PreferredAllocationResponse", False),
        "Allocate": ("AllocateRequest", "AllocateResponse", False),
        "PreStartContainer": ("PreStartContainerRequest", "PreStartContainerResponse", False),
    },
}

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _F.TYPE_STRING, "bool": _F.TYPE_BOOL, "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64}


def _add_field(msg, name: str, number: int, kind: str) -> None:
    f = msg.field.add(name=name, number=number, label=_F.LABEL_OPTIONAL)
    if kind == "map":  # map<string, string>: a repeated nested *Entry message with map_entry set
        entry = msg.nested_type.add(name="".join(p.title() for p in name.split("_")) + "Entry")
        entry.options.map_entry = True
        _add_field(entry, "key", 1, "string")
        _add_field(entry, "value", 2, "string")
        f.label, f.type, f.type_name = _F.LABEL_REPEATED, _F.TYPE_MESSAGE, f".{PACKAGE}.{msg.name}.{entry.name}"
        return
    if kind.startswith("repeated "):
        f.label, kind = _F.LABEL_REPEATED, kind.split(" ", 1)[1]
    if kind in _SCALARS:
        f.type = _SCALARS[kind]
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{kind}"


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The API as a FileDescriptorProto (`api.proto`, package v1beta1)."""
    fd = descriptor_pb2.FileDescriptorProto(name="deviceplugin/v1beta1/api.proto", package=PACKAGE, syntax="proto3")
    for name, fields in MESSAGES.items():
        m = fd.message_type.add(name=name)
        for field in fields:
            _add_field(m, *field)
    for service, methods in SERVICES.items():
        s = fd.service.add(name=service)
        for method, (req, resp, streams) in methods.items():
            s.method.add(name=method, input_type=f".{PACKAGE}.{req}", output_type=f".{PACKAGE}.{resp}",
                         server_streaming=streams)
    return fd


def _message_classes() -> types.SimpleNamespace:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor().SerializeToString())
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get_class is None:
        get_class = message_factory.MessageFactory(pool).GetPrototype
    return types.SimpleNamespace(**{n: get_class(pool.FindMessageTypeByName(f"{PACKAGE}.{n}")) for n in MESSAGES})


msg = _message_classes()


def handler(service: str, servicer) -> grpc.GenericRpcHandler:
    """A handler serving `service` with the servicer's methods of the same names (streams return iterators)."""
    table = {}
    for method, (req, resp, streams) in SERVICES[service].items():
        make = grpc.unary_stream_rpc_method_handler if streams else grpc.unary_unary_rpc_method_handler
        table[method] = make(getattr(servicer, method), request_deserializer=getattr(msg, req).FromString,
                             response_serializer=getattr(msg, resp).SerializeToString)
    return grpc.method_handlers_generic_handler(f"{PACKAGE}.{service}", table)


class Stub:
    """Client callables for `service` on a channel, one attribute per method."""

    def __init__(self, channel: grpc.Channel, service: str):
        for method, (req, resp, streams) in SERVICES[service].items():
            make = channel.unary_stream if streams else channel.unary_unary
            setattr(self, method, make(f"/{PACKAGE}.{service}/{method}",
                                       request_serializer=getattr(msg, req).SerializeToString,
                                       response_deserializer=getattr(msg, resp).FromString))


def target(socket_path) -> str:
    """The gRPC address of a unix socket file."""
    return f"unix://{socket_path}" if str(socket_path).startswith("/") else f"unix:{socket_path}"
