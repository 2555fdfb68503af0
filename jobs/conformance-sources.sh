#!/usr/bin/env bash
# The conformance suites' sources from package registries, cached: what
# jobs/conformance.sh --sources registries runs where GitHub cannot be
# reached (CI: a fresh machine that sees only apt's mirrors, PyPI and
# crates.io).
#
#   MPICH's test/mpi    from Debian's (or Ubuntu's) source package `mpich`:
#                       `apt-get source --download-only`, the version of the
#                       installed MPICH (else the newest), through a private
#                       apt configuration (a deb-src twin of this system's
#                       official deb entries, its own lists): the system's
#                       sources, lists and caches are not touched and no
#                       root is needed. The upstream tarball holds test/mpi;
#                       only include, util, dtpools, coll and maint are kept.
#   mpi4py's test/      from its PyPI sdist (pip download --no-binary mpi4py
#                       --no-deps mpi4py==VERSION), and a virtual
#                       environment with that version's wheel installed (the
#                       tests must match the module they test).
#
# Usage: jobs/conformance-sources.sh [all|mpich|mpi4py]   (default all)
# Prints one line per source, KEY=PATH:
#   MPICH_SOURCE=DIR       DIR/test/mpi is MPICH's test suite
#   MPI4PY_SOURCE=DIR      DIR/test is mpi4py's
#   CONFORMANCE_VENV=DIR   DIR/bin/python imports that mpi4py
# and says what it fetched on stderr. Idempotent: with everything cached it
# fetches nothing and takes well under a second. Exit 1, saying why, when a
# registry cannot be reached or has no such package.
# Environment:
#   COLLTUNE_CACHE          default ~/.cache/colltune; sources go under
#                           $COLLTUNE_CACHE/conformance
#   CONFORMANCE_MPI4PY_VERSION  default 4.1.2
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in
  all | mpich | mpi4py) ;;
  *) echo "usage: jobs/conformance-sources.sh [all|mpich|mpi4py]" >&2; exit 2 ;;
esac
CACHE=${COLLTUNE_CACHE:-$HOME/.cache/colltune}/conformance
M4P_VERSION=${CONFORMANCE_MPI4PY_VERSION:-4.1.2}
mkdir -p "$CACHE"

say() { echo "conformance-sources: $*" >&2; }
die() { say "$*"; exit 1; }
# A fetch is tried twice: a registry's passing error should not skip CI's leg.
twice() { "$@" || { say "failed, trying once more in 5 s: $*"; sleep 5; "$@"; }; }

# ------------------------------------------------------------- MPICH (apt)
# deb-src twins of the system's official deb entries (one-line .list and
# deb822 .sources), written to $1: Debian's and Ubuntu's mirrors only, so a
# third-party repository without sources cannot fail the update.
deb_src_entries() {
  local dir=$1 f n=0
  mkdir -p "$dir"
  rm -f "$dir"/*.list "$dir"/*.sources
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    grep -E '^[[:space:]]*deb[[:space:]]' "$f" | grep -E 'debian\.org|ubuntu\.com' |
      sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' >"$dir/src$n.list" || true
    n=$((n + 1))
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -qE 'debian\.org|ubuntu\.com' "$f" || continue
    # One paragraph per entry; Types: deb becomes deb-src, disabled stay so.
    sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$dir/src$n.sources"
    n=$((n + 1))
  done
  grep -qsE '^(deb-src|Types: deb-src)' "$dir"/*.list "$dir"/*.sources ||
    die "no Debian or Ubuntu apt source in /etc/apt to derive a deb-src entry from"
}

mpich_source() {
  # The source package of the installed MPICH (a binNMU's binary version
  # differs from its source's), else whatever the mirror has.
  local ver
  ver=$(dpkg-query -W -f='${source:Version}' libmpich-dev 2>/dev/null || true)
  local up=${ver#*:}
  up=${up%-*}
  if [ -n "$up" ] && [ -f "$CACHE/mpich-$up/test/mpi/coll/bcast.c" ]; then
    echo "MPICH_SOURCE=$CACHE/mpich-$up"
    return 0
  fi
  command -v apt-get >/dev/null || die "no apt-get: MPICH's tests come from Debian's source package (or pass an MPICH checkout to jobs/conformance.sh)"
  local A=$CACHE/apt
  mkdir -p "$A/lists/partial" "$A/dl"
  deb_src_entries "$A/sources.list.d"
  local apt=(apt-get -q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$A/sources.list.d"
    -o "Dir::State::Lists=$A/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=$(id -un)")
  say "fetching the Debian source package of mpich${ver:+ $ver} (apt-get source, private lists in $A)"
  twice "${apt[@]}" update >"$A/update.log" 2>&1 || { cat "$A/update.log" >&2; die "apt-get update of the deb-src lists failed (above)"; }
  (cd "$A/dl" && twice "${apt[@]}" source --download-only "mpich${ver:+=$ver}") >"$A/source.log" 2>&1 ||
    { cat "$A/source.log" >&2; die "apt-get source mpich${ver:+=$ver} failed (above)"; }
  local orig
  orig=$(find "$A/dl" -maxdepth 1 -name "mpich_${up:-*}.orig.tar.*" | sort | tail -1)
  [ -n "$orig" ] || die "apt-get source left no mpich_*.orig.tar.* in $A/dl"
  up=$(basename "$orig")
  up=${up#mpich_}
  up=${up%.orig.tar.*}
  local tmp=$CACHE/.mpich-$up.tmp
  rm -rf "$tmp" && mkdir -p "$tmp"
  local d parts=()
  for d in include util dtpools coll maint; do parts+=("mpich-$up/test/mpi/$d/*"); done
  # (One pass: each pass decompresses the whole 22 MB tarball.)
  tar -xf "$orig" -C "$tmp" --strip-components=1 --wildcards "${parts[@]}" ||
    die "$orig lacks a part of mpich-$up/test/mpi (${parts[*]})"
  rm -rf "$CACHE/mpich-$up" && mv "$tmp" "$CACHE/mpich-$up"
  # Only test/mpi is kept: the tarball and the lists go.
  rm -rf "$A/dl/mpich_"* "$A/lists"
  say "MPICH $up test/mpi in $CACHE/mpich-$up"
  echo "MPICH_SOURCE=$CACHE/mpich-$up"
}

# ------------------------------------------------------------ mpi4py (PyPI)
mpi4py_source() {
  local V=$CACHE/venv src=$CACHE/mpi4py-$M4P_VERSION
  if [ ! -x "$V/bin/python" ]; then
    say "making a virtual environment in $V"
    python3 -m venv "$V" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  fi
  if [ "$("$V/bin/python" -c 'import mpi4py; print(mpi4py.__version__)' 2>/dev/null)" != "$M4P_VERSION" ]; then
    say "installing mpi4py $M4P_VERSION from PyPI into $V"
    twice "$V/bin/pip" install --quiet --disable-pip-version-check "mpi4py==$M4P_VERSION" || die "pip install mpi4py==$M4P_VERSION failed"
  fi
  if [ ! -f "$src/test/runtests.py" ]; then
    local dl=$CACHE/.mpi4py-dl
    rm -rf "$dl"
    say "fetching the mpi4py $M4P_VERSION sdist from PyPI (its test/)"
    # --no-binary for mpi4py only: its build requirements come as wheels
    # (with :all: pip builds setuptools and Cython from source: minutes).
    twice "$V/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary mpi4py -d "$dl" "mpi4py==$M4P_VERSION" ||
      die "pip download of the mpi4py $M4P_VERSION sdist failed"
    local sdist
    sdist=$(find "$dl" -maxdepth 1 -name "mpi4py-$M4P_VERSION.tar.gz" | head -1)
    [ -n "$sdist" ] || die "pip download left no mpi4py-$M4P_VERSION.tar.gz in $dl"
    local tmp=$CACHE/.mpi4py-$M4P_VERSION.tmp
    rm -rf "$tmp" && mkdir -p "$tmp"
    tar -xzf "$sdist" -C "$tmp" --strip-components=1 "mpi4py-$M4P_VERSION/test" || die "$sdist has no test/"
    rm -rf "$src" && mv "$tmp" "$src" && rm -rf "$dl"
    say "mpi4py $M4P_VERSION test/ in $src"
  fi
  echo "MPI4PY_SOURCE=$src"
  echo "CONFORMANCE_VENV=$V"
}

[ "$what" = mpi4py ] || mpich_source
[ "$what" = mpich ] || mpi4py_source
