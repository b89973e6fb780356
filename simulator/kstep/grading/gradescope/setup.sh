#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04, whose
# python3 is 3.10): it installs what kstep grade needs that is missing, checking each tool, then a
# virtual environment with kstep, and closes /autograder/source to everyone but root.
set -euo pipefail
ROOT=${AUTOGRADER_ROOT:-/autograder}
HERE=$(cd "$(dirname "$0")" && pwd)
say() { echo "kstep setup.sh: $*"; }
have() { command -v "$1" >/dev/null 2>&1; }

python_ok() { "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PY=
for candidate in python3.13 python3.12 python3.11 python3; do
    if have "$candidate" && python_ok "$candidate"; then PY=$(command -v "$candidate"); break; fi
done
missing=()
[[ -n $PY ]] || missing+=(python3.11 python3.11-venv)
have bwrap || missing+=(bubblewrap)
have setpriv || missing+=(util-linux)
if [[ -d $HERE/kernel-lab ]]; then
    have make || missing+=(make)
    have gcc || missing+=(gcc libc6-dev)
    have aarch64-linux-gnu-gcc || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
    have powerpc64le-linux-gnu-gcc || missing+=(gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross)
    have qemu-aarch64 || missing+=(qemu-user)
fi
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || { echo "kstep setup.sh: missing ${missing[*]}, and not root" >&2; exit 2; }
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
    [[ -n $PY ]] || PY=$(command -v python3.11)
fi
python_ok "$PY" || { echo "kstep setup.sh: no Python 3.11 or later after installing" >&2; exit 2; }

say "kstep into $ROOT/kstep-venv with $PY"
"$PY" -m venv "$ROOT/kstep-venv"
"$ROOT/kstep-venv/bin/pip" install -q "numpy>=1.26,<3" "jsonschema>=4.18,<5"
"$ROOT/kstep-venv/bin/pip" install -q --no-deps "$HERE/kstep"
if [[ -d $HERE/kernel-lab ]]; then
    say "building the kernel lab"
    make -s -C "$HERE/kernel-lab"
fi
# The weaker sandbox (no user namespaces here) runs submissions as uid 61000, which must not read
# /autograder/source: the hidden tests and the course secret are there.
chmod 700 "$HERE"
chmod 600 "$HERE/course.toml"
say "done"
