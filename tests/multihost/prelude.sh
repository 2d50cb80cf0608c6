# tests/multihost/prelude.sh - the first lines of every multi-host test,
# sourced by it before anything else: bash (hosts.sh needs it; the test is
# run again under bash when sh started it), the shell tests' helpers
# (tests/lib.sh), the simulated hosts (hosts.sh) and smtd on them
# (smtd.sh), the skip when the hosts cannot be made (mh_require: root,
# namespaces, the tools), and the test's fresh directory $T.
[ -n "${BASH_VERSION:-}" ] || exec /bin/bash "$0" "$@"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/multihost/hosts.sh"
. "$top_srcdir/tests/multihost/smtd.sh"
mh_require
smt_tmpdir
