#!/bin/sh
# ctest "install": `cmake --install` ships a working jctlab. Installs the
# build into a temporary folder twice, with --prefix and with DESTDIR under
# another prefix (jctlab finds its parts relative to its own folder, so
# both must work), and runs each installed jctlab:
#  - inspect on the shipped capture, as build/jctlab inspects it, and
#    with no TRACE on the installed copy of it;
#  - each module the build has, loaded by a command that then stops on an
#    error of its own (agent: a control device that is not there, for the
#    verbs module; rank: a scenario that is not there, for the mpi module);
#  - without a lab kernel, the lab's error names the installed setup-deps;
#  - with its module removed, the error names both paths it tried.
# It fails when an install rule or the installed module lookup is missing;
# the temporary folder goes in every case.
#
# Usage: check_install.sh CMAKE BUILD SOURCE BINDIR LIBDIR DATADIR [MODULE...]
#   BINDIR LIBDIR DATADIR: GNUInstallDirs' CMAKE_INSTALL_*DIR, relative;
#   MODULE: verbs, mpi (the modules this build has)
# Exit: 0 pass, 1 fail, 2 bad usage.
set -eu

[ $# -ge 6 ] || { echo "check_install.sh: CMAKE BUILD SOURCE BINDIR LIBDIR DATADIR [MODULE...]" >&2; exit 2; }
cmake=$1 build=$2 source=$3 bindir=$4 libdir=$5 datadir=$6
shift 6
modules="$*"
trace="$source/traces/rxe-write-send-loss1pct.pcap"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
tmp=$(cd "$tmp" && pwd -P) # /proc/self/exe resolves links: compare like with like

fail() {
  echo "install: $*" >&2
  exit 1
}

# run NAME CMD...: CMD's exit status in $status, its stderr in $tmp/NAME.err.
run() {
  name=$1
  shift
  status=0
  "$@" </dev/null >"$tmp/$name.out" 2>"$tmp/$name.err" || status=$?
}

# has NAME TEXT: NAME's stderr holds TEXT, or fail saying what it said.
has() {
  grep -qF -- "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2': $(cat "$tmp/$1.err")"
}

# A command that loads module M, then stops on an error after it (exit 2).
load_module() {
  case "$1" in
    verbs) run "$2" "$3" agent --control "$tmp/no-control" --rank 1 --nranks 2 --no-net ;;
    mpi) run "$2" "$3" rank "$tmp/no-scenario.yaml" ;;
    *) echo "check_install.sh: unknown module '$1'" >&2; exit 2 ;;
  esac
}
after_load() {
  case "$1" in
    verbs) echo "$tmp/no-control: " ;;
    mpi) echo "$tmp/no-scenario.yaml: " ;;
  esac
}

run build-inspect "$build/jctlab" inspect "$trace"
[ "$status" -eq 0 ] || fail "build/jctlab inspect: exit $status"

# check ROOT: the installed tree under ROOT (PREFIX, or DESTDIR/PREFIX).
check() {
  root=$1
  jctlab="$root/$bindir/jctlab"
  scripts="$root/$datadir/jctlab/scripts"
  [ -x "$jctlab" ] || fail "$jctlab was not installed"
  for s in setup-deps lab-kernel lab-init; do
    [ -x "$scripts/$s" ] || fail "$scripts/$s was not installed (executable)"
  done
  run inspect "$jctlab" inspect "$trace"
  [ "$status" -eq 0 ] || fail "installed jctlab inspect: exit $status: $(cat "$tmp/inspect.err")"
  cmp -s "$tmp/inspect.out" "$tmp/build-inspect.out" ||
    fail "installed jctlab inspect differs from build/jctlab's: $(diff "$tmp/build-inspect.out" "$tmp/inspect.out" | head -5)"
  # With no TRACE, the installed copy of the shipped capture (not the
  # source tree's, which an installed jctlab may no longer have).
  shipped="$root/$datadir/jctlab/traces/rxe-write-send-loss1pct.pcap"
  [ -f "$shipped" ] || fail "$shipped was not installed"
  run default "$jctlab" inspect
  [ "$status" -eq 0 ] || fail "installed jctlab inspect (no TRACE): exit $status: $(cat "$tmp/default.err")"
  grep -qF "Capture    $shipped" "$tmp/default.out" ||
    fail "installed jctlab inspect read another trace: $(head -1 "$tmp/default.out")"
  for m in $modules; do
    so="$root/$libdir/jctlab/jctlab-$m.so"
    [ -f "$so" ] || fail "$so was not installed"
    [ ! -e "$root/$bindir/jctlab-$m.so" ] || fail "jctlab-$m.so was installed beside jctlab"
    load_module "$m" "load-$m" "$jctlab"
    if grep -q "module" "$tmp/load-$m.err" || [ "$status" -ne 2 ]; then
      fail "installed jctlab did not load $so: exit $status: $(cat "$tmp/load-$m.err")"
    fi
    has "load-$m" "$(after_load "$m")"
  done
  case " $modules " in
    *" verbs "*)
      mkdir "$tmp/no-lab"
      run lab env JCT_LAB_CACHE="$tmp/no-lab" "$jctlab" run --synth ring --ranks 2 --bytes 4KiB \
        --transport verbs --lab 2
      rmdir "$tmp/no-lab"
      [ "$status" -ne 0 ] || fail "the lab started without a kernel"
      has lab "run $(cd "$scripts" && pwd -P)/setup-deps --with-lab"
      ;;
  esac
  for m in $modules; do
    rm "$root/$libdir/jctlab/jctlab-$m.so"
    load_module "$m" "missing-$m" "$jctlab"
    [ "$status" -eq 2 ] || fail "without jctlab-$m.so: exit $status: $(cat "$tmp/missing-$m.err")"
    has "missing-$m" "the $m module is missing"
    has "missing-$m" "$root/$bindir/jctlab-$m.so (beside jctlab)"
    has "missing-$m" "/jctlab/jctlab-$m.so (installed)"
  done
}

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install --prefix: $(cat "$tmp/install.log")"
check "$tmp/prefix"
DESTDIR="$tmp/stage" "$cmake" --install "$build" --prefix /opt/jctlab >"$tmp/install.log" 2>&1 ||
  fail "DESTDIR=... cmake --install --prefix /opt/jctlab: $(cat "$tmp/install.log")"
check "$tmp/stage/opt/jctlab"
echo "install: --prefix and DESTDIR trees work (modules:${modules:+ }${modules:-none})"
