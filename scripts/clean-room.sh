#!/usr/bin/env bash
# A clean room: runs commands on a fresh minimal Debian 12 root, so that a package installed on
# this machine by hand cannot hide a gap in scripts/setup.sh.
#
#   scripts/clean-room.sh                    # the README's two commands: scripts/demo.sh, scripts/test.sh
#   scripts/clean-room.sh -- scripts/test.sh # any command, run as root from the clone's top folder
#   scripts/clean-room.sh -- A -- B          # commands one after the other in the same root, each
#                                            # timed; the first that fails ends the run
#   scripts/clean-room.sh --keep -- bash     # keep the root afterwards (for a look inside)
#
# What it does, as root (it re-runs itself with sudo when needed):
#   1. base   `debootstrap --variant=minbase bookworm` with ca-certificates, git and python3 (the only
#             things the README assumes), from the Debian mirror this machine's apt sources name;
#             cached as a tarball, so later runs unpack it in seconds.
#   2. unpack the tarball into a fresh folder under $TMPDIR (default /var/tmp).
#   3. clone  the committed HEAD of this repository into it (/pixflow); nothing uncommitted travels.
#   4. each command, in a private mount namespace: /proc, /sys and /dev mounted, the CUDA Toolkit
#      bound read-only at its own path when this machine has one, the apt archive cache bound in
#      (downloaded .deb files are reused; nothing installed is). The namespace takes every mount
#      with it when it ends, on success, failure or interrupt.
#   5. remove the folder (never across a file-system boundary).
# The last line is `clean-room: PASS (time)` or `clean-room: FAIL (step, exit code N) (time)`.
# Exit status: the failing command's, 0 on success, and 75 when no clean root can be made at all
# (no debootstrap, no mirror reachable, no permission to mount), which .ci/run takes as the only
# reason to run on the host instead.
#
# Environment: PIXFLOW_CLEAN_ROOM_CACHE (default /var/cache/pixflow-clean-room) holds the base
# tarball and the apt archive cache; delete it to rebuild the base.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$(date +%s)

keep=0
cmds=()
all_args=("$@") # for the re-run under sudo: the loop below consumes them
while (($#)); do
    case "$1" in
    --keep) keep=1; shift ;;
    --)
        shift
        cmd=
        for word in "$@"; do
            if [ "$word" = -- ]; then
                [ -n "$cmd" ] && cmds+=("$cmd")
                cmd=
            else
                cmd=${cmd:+$cmd }$word
            fi
        done
        [ -n "$cmd" ] && cmds+=("$cmd")
        break
        ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "clean-room: unknown argument '$1' (usage: scripts/clean-room.sh [--keep] [-- COMMAND...])" >&2; exit 2 ;;
    esac
done
((${#cmds[@]})) || cmds=("scripts/demo.sh" "scripts/test.sh")

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "clean-room: needs root (or sudo)"; exit 75; }
    exec sudo -E "$0" "${all_args[@]}"
fi

elapsed() { local s=$(($(date +%s) - started)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
fail() { # step, exit code
    echo "clean-room: FAIL ($1, exit code $2) ($(elapsed))"
    exit "$2"
}
cannot() { # no clean root can be made here
    echo "clean-room: cannot make a clean root: $1"
    echo "clean-room: FAIL (base, exit code 75) ($(elapsed))"
    exit 75
}

cache=${PIXFLOW_CLEAN_ROOM_CACHE:-/var/cache/pixflow-clean-room}
base_packages=ca-certificates,git,python3
tarball=$cache/bookworm-minbase-$(echo "$base_packages" | tr ',' '+').tar.gz
mkdir -p "$cache/apt-archives/partial"

# ---- the mirror this machine already uses (no host name is written in the repo)
mirror_of() { # suite/component, e.g. bookworm/main -> its URI, from apt's own view of the sources
    apt-cache policy 2>/dev/null | awk -v want="$1" '$3 == want && $2 ~ /^https?:/ {print $2; exit}'
}
mirror=$(mirror_of bookworm/main)
security=$(mirror_of bookworm-security/main)
[ -n "$mirror" ] || cannot "no Debian bookworm mirror in this machine's apt sources"

# ---- 1. base tarball
if [ ! -s "$tarball" ]; then
    if ! command -v debootstrap >/dev/null; then
        echo "clean-room: installing debootstrap on this machine (a tool of the clean room, not of pixflow)"
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap; } \
            >"$cache/debootstrap-install.log" 2>&1 || cannot "debootstrap is missing and could not be installed"
    fi
    echo "clean-room: bootstrapping a minimal Debian 12 (minbase + $base_packages) from $mirror"
    staging=$(mktemp -d "${TMPDIR:-/var/tmp}/pixflow-base.XXXXXX")
    if ! debootstrap --variant=minbase --include="$base_packages" --cache-dir="$cache/apt-archives" \
        bookworm "$staging/root" "$mirror" >"$cache/debootstrap.log" 2>&1; then
        tail -5 "$cache/debootstrap.log"
        rm -rf --one-file-system "$staging"
        cannot "debootstrap failed (log: $cache/debootstrap.log)"
    fi
    rm -f "$staging/root/var/cache/apt/archives/"*.deb
    tar -C "$staging/root" --numeric-owner -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf --one-file-system "$staging"
fi

# ---- 2. a fresh root, removed on every way out
work=$(mktemp -d "${TMPDIR:-/var/tmp}/pixflow-clean-room.XXXXXX")
root=$work/root
child=
cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
    # The mounts live in the child's namespace and went with it; if anything is still mounted
    # below the root (the child was killed hard), undo it before removing anything.
    if findmnt -rno TARGET | grep -q "^$root"; then
        findmnt -rno TARGET | grep "^$root" | sort -r | xargs -r umount -l
    fi
    if ((keep)); then echo "clean-room: kept $root"; else rm -rf --one-file-system "$work"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'echo "clean-room: interrupted"; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$root"
tar -C "$root" --numeric-owner -xzf "$tarball" || fail unpack $?
{
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -n "$security" ] && echo "deb $security bookworm-security main"
} >"$root/etc/apt/sources.list"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# /etc/hosts as the Debian installer (or any container runtime) writes it: debootstrap makes none,
# and without it `localhost` goes to the DNS server. Every MPI rank's hwloc (its GL plugin, from
# libhwloc-plugins) probes X displays :0 to :9, libxcb falling back to TCP on localhost for each;
# one lost UDP reply among those lookups costs glibc's 5 s resolver timeout inside MPI_Init. That
# made every mpiexec of 3 or more ranks take 6.3 s instead of 1.3 s here (strace of a rank: a
# 4990 ms poll on the DNS socket after a `localhost` query), the bulk of the MPI tests' time.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' \
    "$(uname -n)" >"$root/etc/hosts"

# ---- 3. the committed HEAD
head=$(git -C "$repo" rev-parse HEAD)
git clone -q --no-hardlinks "$repo" "$root/pixflow" && git -C "$root/pixflow" checkout -q --detach "$head" ||
    fail clone $?
echo "clean-room: $(git -C "$repo" log -1 --format='%h %s' "$head" | cut -c1-100)"

# ---- 4. the commands, in a mount namespace of their own
cuda=
[ -d /usr/local/cuda ] && cuda=$(readlink -f /usr/local/cuda)
echo "clean-room: root $root; CUDA Toolkit: ${cuda:-none on this machine}"
printf '%s\n' "${cmds[@]}" >"$work/commands"
unshare --mount --propagation private --fork bash -euo pipefail -c '
    root=$1 cache=$2 cuda=$3 work=$4
    mount -t proc proc "$root/proc"
    mount -t sysfs sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
    if [ -n "$cuda" ]; then
        mkdir -p "$root$cuda"
        mount --bind "$cuda" "$root$cuda"
        mount -o remount,bind,ro "$root$cuda"
        ln -sfn "$cuda" "$root/usr/local/cuda"
    fi
    while IFS= read -r cmd; do
        echo "clean-room: == $cmd"
        t0=$(date +%s)
        set +e
        chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            bash -c "cd /pixflow && $cmd" </dev/null
        status=$?
        set -e
        echo "clean-room: $cmd: exit $status after $(($(date +%s) - t0)) s"
        if [ "$status" -ne 0 ]; then echo "$cmd" >"$work/failed"; exit "$status"; fi
    done <"$work/commands"
' clean-room "$root" "$cache" "$cuda" "$work" &
child=$!
status=0
wait "$child" || status=$?
child=
if ((status)); then
    step=$(cat "$work/failed" 2>/dev/null || echo "mounts")
    [ "$step" = mounts ] && cannot "could not mount /proc, /sys or /dev in the root (exit $status)"
    fail "$step" "$status"
fi
echo "clean-room: PASS ($(elapsed))"
