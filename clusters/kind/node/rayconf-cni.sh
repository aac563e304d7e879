#!/bin/sh
# Pod networking for the project's kind node image, in place of kindnetd (not on the Go module proxy).
# Run before every kubelet start (kubelet drop-in 12-rayconf-cni.conf). Static, no agent: a node whose kind
# network address is A.B.C.N gets the Pod range P.Q.N.0/24 (P.Q from the cluster's podSubnet, a /16), a ptp +
# host-local + portmap CNI config for it, and a route to every other possible node's range P.Q.M.0/24 via
# A.B.C.M on eth0. Nodes that do not exist make routes nobody uses.
set -eu
ip4=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$ip4" ] || { echo "rayconf-cni: eth0 has no IPv4 address" >&2; exit 1; }
subnet=$(sed -n 's/^[[:space:]]*podSubnet:[[:space:]]*"\{0,1\}\([0-9.]*\/[0-9]*\).*/\1/p' /kind/kubeadm.conf 2>/dev/null | head -1)
[ -n "$subnet" ] || subnet=10.244.0.0/16
state="$ip4 $subnet"
[ "$(cat /run/rayconf-cni.state 2>/dev/null)" = "$state" ] && exit 0
pfx=$(echo "$subnet" | cut -d. -f1-2)
net=$(echo "$ip4" | cut -d. -f1-3)
me=$(echo "$ip4" | cut -d. -f4)
mkdir -p /etc/cni/net.d
cat > /etc/cni/net.d/10-rayconformance.conflist <<JSON
{
  "cniVersion": "1.0.0",
  "name": "rayconformance",
  "plugins": [
    {"type": "ptp", "ipMasq": false, "mtu": 1500,
     "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state",
              "ranges": [[{"subnet": "$pfx.$me.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
sysctl -qw net.ipv4.ip_forward=1
i=1
while [ $i -le 254 ]; do
  [ $i = "$me" ] || echo "route replace $pfx.$i.0/24 via $net.$i dev eth0"
  i=$((i + 1))
done | ip -batch -
echo "$state" > /run/rayconf-cni.state
echo "rayconf-cni: node $ip4 Pods $pfx.$me.0/24 (podSubnet $subnet)"
