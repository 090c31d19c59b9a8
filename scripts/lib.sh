# SPDX-License-Identifier: MIT
# Shared by the scripts: installs missing Debian packages (idempotent, silent when nothing is
# missing) and configures the build directory.

IBQOS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Packages every build needs, and those the end-to-end tests and tools use.
IBQOS_BUILD_PACKAGES="g++ meson ninja-build pkg-config libboost-dev catch2 scdoc python3"
IBQOS_FABRIC_PACKAGES="opensm libopensm-dev ibsim-utils libumad2sim0 infiniband-diags libibumad-dev libibmad-dev libibnetdisc-dev libibverbs-dev rdma-core"
# The monitor's TLS test makes a self-signed certificate.
IBQOS_FABRIC_PACKAGES="$IBQOS_FABRIC_PACKAGES openssl"

# host-sched builds against libibumad, libibverbs and libmlx5 (headers, pkg-config, libraries),
# and librdmacm's header (the preload library interposes its calls; it links none of them).
IBQOS_BUILD_PACKAGES="$IBQOS_BUILD_PACKAGES libibumad-dev libibverbs-dev ibverbs-providers librdmacm-dev"

# Kept libraries instead of hand-written parts.
IBQOS_BUILD_PACKAGES="$IBQOS_BUILD_PACKAGES nlohmann-json3-dev libcli11-dev libsystemd-dev libbenchmark-dev"
# ibqos monitor's HTTP server, its web config (YAML) and basic auth (bcrypt).
IBQOS_BUILD_PACKAGES="$IBQOS_BUILD_PACKAGES libmicrohttpd-dev libyaml-cpp-dev libcrypt-dev"
# The ibqos command's allocator (common/heap.hpp).
IBQOS_BUILD_PACKAGES="$IBQOS_BUILD_PACKAGES libmimalloc-dev"
# man, for the test that the man pages render as written.
IBQOS_BUILD_PACKAGES="$IBQOS_BUILD_PACKAGES man-db"

# The Debian packages (tests/packaging): the tools, and every build dependency of debian/control.
IBQOS_PACKAGING_PACKAGES="build-essential dpkg-dev debhelper lintian $IBQOS_BUILD_PACKAGES libopensm-dev libibmad-dev libibnetdisc-dev"

ensure_packages() {
    local missing=()
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "ibqos: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
        return 1
    fi
    echo "ibqos: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=120 update -qq >/dev/null
    apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure_build DIR [meson options...]: sets DIR up once, then only rebuilds.
configure_build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$IBQOS_ROOT" "$@" >/dev/null
    fi
    ninja -C "$dir" >/dev/null
}
