# Shared helpers for clusters/kind/build-*.sh (sourced after `here` is set): the pins, the tool cache and its logs,
# and the record of how long each real (not cached) build took.
# shellcheck shell=bash
# shellcheck source=../local/versions.env
. "$here/../local/versions.env"
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
LOGS=${RAYCONF_LOGS:-$CACHE/logs}
BUILD_TIMES=$LOGS/build-times.tsv   # one line per real build: UTC time, what, version or tag, seconds
mkdir -p "$LOGS" 2>/dev/null || { echo "$(basename "$0"): cannot create $LOGS (set RAYCONF_CACHE to a writable directory)" >&2; exit 2; }

stamp() { date +%s; }
# record_build WHAT VERSION START: append a real build's duration (since START, a `stamp`) to $BUILD_TIMES
record_build() {
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" "$2" "$(( $(stamp) - $3 ))" >> "$BUILD_TIMES"
}

# The Debian mirror this machine's apt uses (first `URIs:` / `deb` line naming the main archive):
# debootstrap fetches from the same place apt does, so the scripts name no host themselves.
debian_mirror() {
  local u
  u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' |
      grep -v -- '-security' | head -1)
  [ -n "$u" ] || u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' | grep -v -- '-security' | head -1)
  [ -n "$u" ] || { echo "no Debian mirror found in /etc/apt/sources.list*" >&2; return 1; }
  echo "$u"
}

# debootstrap_base SUITE DIR: a minbase rootfs in DIR (cached: skipped when DIR/.complete exists)
debootstrap_base() {
  local suite=$1 dir=$2 mirror
  [ -f "$dir/.complete" ] && return 0
  mirror=$(debian_mirror)
  rm -rf "$dir"; mkdir -p "$(dirname "$dir")"
  debootstrap --variant=minbase "$suite" "$dir" "$mirror"
  touch "$dir/.complete"
}

# chroot_apt DIR PKG...: install Debian packages into a rootfs (proc/sys/dev mounted for the duration)
chroot_apt() {
  local dir=$1; shift
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  mount -t proc proc "$dir/proc"; mount --bind /dev "$dir/dev"
  local rc=0
  chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || rc=$?
  [ $rc = 0 ] && { chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" || rc=$?; }
  chroot "$dir" apt-get clean || true
  rm -rf "$dir/var/lib/apt/lists/"*
  umount "$dir/dev" "$dir/proc"
  : > "$dir/etc/resolv.conf"
  return $rc
}

# chroot_run DIR CMD...: run a command in a rootfs with /proc and /dev mounted and the host's resolv.conf
chroot_run() {
  local dir=$1; shift
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  mount -t proc proc "$dir/proc"; mount --bind /dev "$dir/dev"
  local rc=0
  chroot "$dir" "$@" || rc=$?
  umount "$dir/dev" "$dir/proc"
  : > "$dir/etc/resolv.conf"
  return $rc
}

# static_base DIR: the few files a static binary's image needs (passwd, group, nsswitch, CA certificates, /tmp)
static_base() {
  local dir=$1
  [ -f "$dir/.complete" ] && return 0
  rm -rf "$dir"; mkdir -p "$dir/etc/ssl/certs" "$dir/tmp" "$dir/var/run" "$dir/root"
  chmod 1777 "$dir/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n' > "$dir/etc/group"
  echo 'hosts: files dns' > "$dir/etc/nsswitch.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
  touch "$dir/.complete"
}

# busybox_rootfs DIR: static_base plus Debian's busybox-static as /bin/busybox and its applets (cached by DIR/.complete)
busybox_rootfs() {
  local dir=$1 tmp a
  [ -f "$dir/.complete" ] && return 0
  tmp=$(mktemp -d); rm -rf "$dir"
  (cd "$tmp" && apt-get download busybox-static >/dev/null && dpkg -x busybox-static_*.deb x)
  static_base "$dir"; rm -f "$dir/.complete"; mkdir -p "$dir/bin"
  cp "$tmp/x/bin/busybox" "$dir/bin/busybox"; rm -rf "$tmp"
  for a in $("$dir/bin/busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$dir/bin/$a"; done
  touch "$dir/.complete"
}
