#!/bin/sh
# A PyTorch DataLoader worker (a child of the rank) dies of SIGBUS in a
# 1 MiB /dev/shm and the rank raises: the failure's first line says that
# /dev/shm is too small - smaller than --min-shm, here its default (1 GiB),
# whatever share of it was in use when the rank ended.  smtd runs in a mount
# namespace of its own whose /dev/shm is that tmpfs.  The python3 smtd
# finds on PATH has no torch (a wrapper of Debian's), so the job is not a
# PyTorch job to smtd and the preflight only warns of that /dev/shm (a
# PyTorch job's preflight would refuse it before the launch:
# test_preflight's part); the rank still runs /usr/bin/python3 with torch.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
[ "$(id -u)" = 0 ] || skip "needs root for a mount namespace"
/usr/bin/python3 -c 'import torch' 2>/dev/null || skip "no torch for /usr/bin/python3"
command -v unshare >/dev/null || skip "no unshare"
cat >"$T/loader.py" <<'PY'
import torch
from torch.utils.data import DataLoader, Dataset

class Batches(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.ones(4 << 20, dtype=torch.uint8)

for b in DataLoader(Batches(), batch_size=1, num_workers=1):
    pass
PY
mkdir -p "$T/root" "$T/notorch"
printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$T/notorch/python3"
chmod +x "$T/notorch/python3"
rc=0
PATH=$T/notorch:/usr/bin:/bin:/usr/sbin:/sbin timeout 120 unshare -m /bin/sh -c \
	'mount -n -t tmpfs -o size=1m,mode=1777 smt-shm /dev/shm && exec "$@"' sh \
	"$SMTD" --root "$T/root" --sshd never -- /usr/bin/python3 "$T/loader.py" >"$T/out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code"
grep -qF "/dev/shm is 1 MiB, less than --min-shm 1 GiB (a warning: the ranks do not use PyTorch)" "$T/out" ||
	fail "no warning of the small /dev/shm before the launch: $(grep 'preflight on' "$T/out")"
head -1 "$T/root/output/failure" | grep -qE "^RankFailed: rank 0 on [^ ]+ exited with code 1: RuntimeError: DataLoader worker \(pid\(s\) [0-9]+\) exited unexpectedly; /dev/shm is 1 MiB, [0-9]+ % used \(PyTorch DataLoader workers need more: --shm-size\)$" ||
	fail "first line: $(head -1 "$T/root/output/failure")"
echo ok
