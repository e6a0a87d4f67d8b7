#!/usr/bin/env bash
# Build the P/SLE Apptainer image from Apptainer.def (Debian packages + PyPI only; no Docker hub).
#
#   scripts/build_container.sh [IMAGE.sif]          build (default ./psle.sif); skipped when up to date
#   scripts/build_container.sh --exec IMAGE.sif CMD...   run CMD in the image with the same apptainer
#
# With `apptainer` on PATH it is used directly (--fakeroot unless root). Otherwise, as root on
# Debian (12 has no apptainer package, and sid's needs a newer glibc), a small Debian sid root
# with apptainer is debootstrapped once into $PSLE_APPTAINER_ROOT (default /var/lib/psle-apptainer)
# and entered with pivot_root (apptainer refuses a plain chroot). There, apptainer runs as the
# unprivileged user `builder` with --fakeroot, because root may lack CAP_SYS_RESOURCE. The repo is
# bound read-only at /src; --exec binds the current directory and the image's at their own paths
# and runs with a clean environment, as `builder` (uid 1000: outputs need a directory it can write).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SID=${PSLE_APPTAINER_ROOT:-/var/lib/psle-apptainer}
R=$SID/root
say() { echo "build_container: $*" >&2; }
die() { say "error: $*"; exit 1; }

setup_sid() {  # debootstrap the sid root once (into root.partial, renamed when complete) and add `builder`
  [ "$(id -u)" = 0 ] || die "apptainer is not on PATH; install it (https://apptainer.org) or run this as root on Debian"
  [ -f /etc/debian_version ] || die "apptainer is not on PATH and this is not Debian; install apptainer"
  if [ ! -x "$R/usr/bin/apptainer" ]; then
    if ! command -v debootstrap >/dev/null; then
      say "installing debootstrap ..."
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap; } \
        >/dev/null || die "apt-get could not install debootstrap"
    fi
    local mirror=${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)}
    [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || die "no Debian mirror found in apt's sources; set DEBIAN_MIRROR"
    say "debootstrapping a Debian sid root with apptainer into $R (once; ~2 min, ~450 MB) ..."
    rm -rf "$R.partial"; mkdir -p "$SID"
    debootstrap --variant=minbase --include=apptainer,debootstrap sid "$R.partial" "$mirror" >"$SID/debootstrap.log" 2>&1 \
      || die "debootstrap failed; see $SID/debootstrap.log"
    mv "$R.partial" "$R"
  fi
  cp /etc/hosts /etc/resolv.conf "$R/etc/"
  mkdir -p "$R/.oldroot" "$R/src"
  chroot "$R" sh -ec '
    id builder >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/bash builder
    for f in /etc/subuid /etc/subgid; do grep -q "^builder:" $f || echo "builder:100000:65536" >> $f; done
    mkdir -p /home/builder/tmp; chown builder: /home/builder/tmp'
}

in_sid() {  # in_sid DIR... -- CMD...: run CMD as `builder` in the sid root, each DIR bound at its own path, in the first
  unshare --mount --pid --fork --propagation private bash -ec '
    R=$1 src=$2; shift 2
    mount --bind "$R" "$R"
    mount --rbind /dev "$R/dev"; mount --rbind /sys "$R/sys"
    mount --bind "$src" "$R/src"; mount -o remount,bind,ro "$R/src"
    mount -t tmpfs tmpfs "$R/tmp"
    here=/; [ "$1" = -- ] || here=$1
    while [ "$1" != -- ]; do mkdir -p "$R$1"; mount --bind "$1" "$R$1"; shift; done; shift
    cd "$R"; pivot_root . .oldroot; cd /
    mount -t proc proc /proc
    umount -l /.oldroot
    cd "$here"
    exec setpriv --reuid=builder --regid=builder --init-groups env -i HOME=/home/builder PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      APPTAINER_TMPDIR=/home/builder/tmp APPTAINER_CACHEDIR=/home/builder/.apptainer "$@"' \
    in_sid "$R" "$REPO" "$@"
}

if [ "${1:-}" = --exec ]; then
  [ $# -ge 3 ] || die "usage: $0 --exec IMAGE.sif CMD..."
  image=$(realpath "$2"); shift 2
  [ -f "$image" ] || die "no image at $image"
  if command -v apptainer >/dev/null; then exec apptainer exec "$image" "$@"; fi
  setup_sid
  in_sid "$PWD" "$(dirname "$image")" -- apptainer exec "$image" "$@"; exit
fi
OUT=$(realpath -m "${1:-psle.sif}")
if [ -f "$OUT" ] && [ -z "$(cd "$REPO" && find Apptainer.def pyproject.toml constraints.txt README.md hpc hydra_plugins conf \
    -newer "$OUT" -not -path '*/__pycache__*' -print -quit)" ]; then
  say "$OUT is up to date"; exit 0
fi
mkdir -p "$(dirname "$OUT")"
# pip in the image reaches PyPI with the CA bundle this host trusts (see %arguments in Apptainer.def).
CA=${PSLE_CA_BUNDLE:-}
for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do [ -n "$CA" ] || [ ! -f $f ] || CA=$f; done
[ -f "$CA" ] || die "no CA certificate bundle found; set PSLE_CA_BUNDLE=/path/to/bundle.pem"
start=$SECONDS
if command -v apptainer >/dev/null; then
  fake=(); [ "$(id -u)" = 0 ] || fake=(--fakeroot)
  say "building $OUT with $(apptainer --version) ..."
  (cd "$REPO" && apptainer build --force "${fake[@]}" --build-arg "CA_BUNDLE=$CA" "$OUT.partial" Apptainer.def) \
    || die "apptainer build failed"
else
  setup_sid
  install -m 644 "$CA" "$R/home/builder/build-ca.crt"
  say "building $OUT with apptainer $(chroot "$R" dpkg-query -W -f "\${Version}" apptainer) in $R as user builder ..."
  in_sid -- sh -c 'cd /src && apptainer build --force --fakeroot --build-arg CA_BUNDLE=/home/builder/build-ca.crt \
    /home/builder/psle.sif Apptainer.def' || die "apptainer build failed"
  mv "$R/home/builder/psle.sif" "$OUT.partial"; chown "$(id -u):$(id -g)" "$OUT.partial"
fi
mv "$OUT.partial" "$OUT"
say "built $OUT ($(du -h "$OUT" | cut -f1)) in $((SECONDS - start)) s"
