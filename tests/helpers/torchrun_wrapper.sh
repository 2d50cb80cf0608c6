#!/bin/sh
# torchrun_wrapper.sh - Debian's torchrun (torch 1.13) with the two options
# it needs under Python 3.11: without --redirects/--tee it fails at start
# ('NoneType' object has no attribute 'get' in to_map).  Tests put
# it on PATH as "torchrun" (a symbolic link by that name).
exec /usr/bin/torchrun --redirects 1 --tee 1 "$@"
