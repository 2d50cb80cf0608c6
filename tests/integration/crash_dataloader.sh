#!/bin/sh
# A PyTorch DataLoader worker (a child of the rank) dies of SIGBUS in a
# 1 MiB /dev/shm and the rank raises: the failure's first line says that
# /dev/shm is too small.  smtd runs in a mount namespace of its own whose
# /dev/shm is that tmpfs.  --min-shm 0: with torch in /usr/bin/python3
# the job is a PyTorch job and the preflight would refuse that /dev/shm
# before the launch (test_preflight's part); this is the crash's part.
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
mkdir -p "$T/root"
rc=0
timeout 120 unshare -m /bin/sh -c 'mount -n -t tmpfs -o size=1m,mode=1777 smt-shm /dev/shm && exec "$@"' sh \
	"$SMTD" --root "$T/root" --sshd never --min-shm 0 -- /usr/bin/python3 "$T/loader.py" >"$T/out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code"
head -1 "$T/root/output/failure" | grep -qE "^RankFailed: rank 0 on [^ ]+ exited with code 1: RuntimeError: DataLoader worker \(pid\(s\) [0-9]+\) exited unexpectedly; /dev/shm is 1 MiB, [0-9]+ % used \(PyTorch DataLoader workers need more: --shm-size\)$" ||
	fail "first line: $(head -1 "$T/root/output/failure")"
echo ok
