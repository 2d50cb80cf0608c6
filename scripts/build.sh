#!/bin/sh
# Configure and build smtd in a separate build directory.
#   scripts/build.sh DIR [configure options...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ -n "$(find . -name '*.mk' -newer configure -o -name Makefile.am -newer configure | head -1)" ]; then
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ] || [ "$*" != "$(cat .smt-configure-args 2>/dev/null)" ]; then
	"$top/configure" --prefix=/usr/local --sysconfdir=/etc --localstatedir=/var "$@" >configure.out 2>&1 ||
		{ tail -30 configure.out >&2; exit 1; }
	printf '%s' "$*" > .smt-configure-args
fi
make -j"$(nproc)" >make.out 2>&1 || { grep -E 'error|Error' make.out | head -40 >&2; tail -20 make.out >&2; exit 1; }
