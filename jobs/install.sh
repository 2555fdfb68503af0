#!/usr/bin/env bash
# Installs a built colltune: the binary, its two libraries and header, man
# pages and shell completions generated from the binary's own command-line
# definitions, an Lmod modulefile and (TABLE=...) the site's decision table.
#   jobs/install.sh            # after jobs/local.sh (or jobs/build.sh)
#   TABLE=tuning-tables/$(hostname -s).yaml jobs/install.sh
#
# Parameters (environment):
#   PREFIX        where to install (default /usr/local as root, else ~/.local)
#   COLLTUNE_MPI  which build (default openmpi4: target/release; mpich4,
#                 openmpi5, ...: target/NAME/release, see docs/mpi-libraries.md)
#   BUILD_DIR     the build's directory instead (holds colltune and the .so files)
#   TABLE         a decision table to install as PREFIX/share/colltune/tables/
#                 and to name in the modulefile (COLLTUNE_TABLE)
#   MODULEFILES   the modulefile tree (default PREFIX/share/modulefiles):
#                 writes MODULEFILES/colltune/VERSION.lua
#   COLLTUNE_NO_BUILD=1  fail instead of building what is missing
# Installs (PREFIX/...):
#   bin/colltune, lib/libcolltune.so, lib/libcolltune_preload.so,
#   include/colltune.h, share/man/man1/colltune*.1,
#   share/bash-completion/completions/colltune, share/zsh/site-functions/_colltune,
#   share/fish/vendor_completions.d/colltune.fish, share/modulefiles/colltune/VERSION.lua
# Running it again replaces what it installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then default_prefix=/usr/local; else default_prefix=$HOME/.local; fi
PREFIX=${PREFIX:-$default_prefix}
MPI=${COLLTUNE_MPI:-openmpi4}
case "$MPI" in
  openmpi4) dir=target/release; family=openmpi ;;
  openmpi5) dir=target/$MPI/release; family=openmpi ;;
  mpich4 | mpich5 | impi) dir=target/$MPI/release; family=mpich ;;
  mpich5-abi) dir=target/$MPI/release; family=abi ;;
  *) echo "install: COLLTUNE_MPI=$MPI: one of openmpi4, mpich4, openmpi5, mpich5, impi, mpich5-abi" >&2; exit 2 ;;
esac
dir=${BUILD_DIR:-$dir}
need=("$dir/colltune" "$dir/libcolltune.so" "$dir/libcolltune_preload.so")
missing=0
for f in "${need[@]}"; do [ -e "$f" ] || missing=1; done
if [ "$missing" = 1 ]; then
  if [ -n "${COLLTUNE_NO_BUILD:-}" ] || [ -n "${BUILD_DIR:-}" ]; then
    echo "install: $dir lacks colltune, libcolltune.so or libcolltune_preload.so: build first (jobs/build.sh --mpi $MPI)" >&2
    exit 2
  fi
  jobs/build.sh --mpi "$MPI"
fi
if [ -n "${TABLE:-}" ]; then
  [ -f "$TABLE" ] || { echo "install: TABLE=$TABLE: no such file" >&2; exit 2; }
  "$dir/colltune" validate "$TABLE" >/dev/null || {
    echo "install: TABLE=$TABLE does not validate (colltune validate $TABLE says why); nothing installed" >&2
    exit 2
  }
fi

version=$("$dir/colltune" --version | head -1 | awk '{print $NF}')
MODULEFILES=${MODULEFILES:-$PREFIX/share/modulefiles}
bash_dir=$PREFIX/share/bash-completion/completions
zsh_dir=$PREFIX/share/zsh/site-functions
fish_dir=$PREFIX/share/fish/vendor_completions.d
man_dir=$PREFIX/share/man/man1
mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/include" "$man_dir" "$bash_dir" "$zsh_dir" "$fish_dir" "$MODULEFILES/colltune"

install -m 755 "$dir/colltune" "$PREFIX/bin/colltune"
install -m 755 "$dir/libcolltune.so" "$dir/libcolltune_preload.so" "$PREFIX/lib/"
install -m 644 capi/include/colltune.h "$PREFIX/include/"
bin=$PREFIX/bin/colltune
# Pages and completions from the installed binary's own definitions.
rm -f "$man_dir"/colltune.1 "$man_dir"/colltune-*.1
"$bin" generate man --dir "$man_dir" 2>/dev/null
"$bin" generate completions bash > "$bash_dir/colltune"
"$bin" generate completions zsh > "$zsh_dir/_colltune"
"$bin" generate completions fish > "$fish_dir/colltune.fish"

table=""
if [ -n "${TABLE:-}" ]; then
  mkdir -p "$PREFIX/share/colltune/tables"
  table=$PREFIX/share/colltune/tables/$(basename "$TABLE")
  install -m 644 "$TABLE" "$table"
fi
sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$version|g" -e "s|@MPI_NAME@|$MPI|g" \
    -e "s|@MPI_FAMILY@|$family|g" -e "s|@TABLE@|$table|g" \
    jobs/lmod/colltune.lua.in > "$MODULEFILES/colltune/$version.lua"

echo "install: colltune $version ($MPI build) in $PREFIX"
echo "install:   $bin, $PREFIX/lib/libcolltune{,_preload}.so, $PREFIX/include/colltune.h"
echo "install:   man pages in $man_dir, completions for bash, zsh and fish"
[ -n "$table" ] && echo "install:   the table $table"
echo "install:   the modulefile $MODULEFILES/colltune/$version.lua"
case ":$PATH:" in *":$PREFIX/bin:"*) ;; *) echo "install: add $PREFIX/bin to your PATH (man finds the pages through it)" ;; esac
echo "install: next: man colltune; in a job: module use $MODULEFILES && module load colltune"
