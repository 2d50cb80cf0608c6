[New LWP 474]
[New LWP 514]
[New LWP 515]
[New LWP 516]
[New LWP 518]
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
__futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, futex_word=0x5062a28) at ./nptl/futex-internal.c:57

Thread 6 (Thread 0x7fa2921a66c0 (LWP 518) "python3.11"):
#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x7fa2921a5840, op=137, expected=0, futex_word=0x7fa27c003878) at ./nptl/futex-internal.c:57
#1  __futex_abstimed_wait_common (futex_word=futex_word@entry=0x7fa27c003878, expected=expected@entry=0, clockid=clockid@entry=1, abstime=abstime@entry=0x7fa2921a5840, private=private@entry=0, cancel=cancel@entry=true) at ./nptl/futex-internal.c:87
#2  0x00007fa2b6688f7b in __GI___futex_abstimed_wait_cancelable64 (futex_word=futex_word@entry=0x7fa27c003878, expected=expected@entry=0, clockid=clockid@entry=1, abstime=abstime@entry=0x7fa2921a5840, private=private@entry=0) at ./nptl/futex-internal.c:139
#3  0x00007fa2b668bbaf in __pthread_cond_wait_common (abstime=<optimized out>, clockid=1, mutex=0x7fa27c003828, cond=0x7fa27c003850) at ./nptl/pthread_cond_wait.c:503
#4  ___pthread_cond_clockwait64 (abstime=<optimized out>, clockid=1, mutex=0x7fa27c003828, cond=0x7fa27c003850) at ./nptl/pthread_cond_wait.c:682
#5  ___pthread_cond_clockwait64 (cond=0x7fa27c003850, mutex=0x7fa27c003828, clockid=1, abstime=<optimized out>) at ./nptl/pthread_cond_wait.c:670
#6  0x00007fa2abfd8d6b in gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/libgloo.so.0
#7  0x00007fa2abfa88f7 in ?? () from /lib/libgloo.so.0
#8  0x00007fa2b226ceb5 in ?? () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#9  0x00007fa2b226c8ad in c10d::ProcessGroupGloo::AsyncWork::execute(c10::intrusive_ptr<c10d::ProcessGroupGloo::AsyncWork, c10::detail::intrusive_target_default_null_type<c10d::ProcessGroupGloo::AsyncWork> >) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#10 0x00007fa2b226c9d4 in c10d::ProcessGroupGloo::runLoop(int) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#11 0x00007fa2ad6d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#12 0x00007fa2b668c1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#13 0x00007fa2b670c8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 5 (Thread 0x7fa2929a76c0 (LWP 516) "python3.11"):
#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, futex_word=0x4d401e8) at ./nptl/futex-internal.c:57
#1  __futex_abstimed_wait_common (futex_word=futex_word@entry=0x4d401e8, expected=expected@entry=0, clockid=clockid@entry=0, abstime=abstime@entry=0x0, private=private@entry=0, cancel=cancel@entry=true) at ./nptl/futex-internal.c:87
#2  0x00007fa2b6688f7b in __GI___futex_abstimed_wait_cancelable64 (futex_word=futex_word@entry=0x4d401e8, expected=expected@entry=0, clockid=clockid@entry=0, abstime=abstime@entry=0x0, private=private@entry=0) at ./nptl/futex-internal.c:139
#3  0x00007fa2b668b5d8 in __pthread_cond_wait_common (abstime=0x0, clockid=0, mutex=0x4d40198, cond=0x4d401c0) at ./nptl/pthread_cond_wait.c:503
#4  ___pthread_cond_wait (cond=0x4d401c0, mutex=0x4d40198) at ./nptl/pthread_cond_wait.c:618
#5  0x00007fa2b226cac1 in c10d::ProcessGroupGloo::runLoop(int) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#6  0x00007fa2ad6d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#7  0x00007fa2b668c1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#8  0x00007fa2b670c8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 4 (Thread 0x7fa2931a86c0 (LWP 515) "python3.11"):
#0  0x00007fa2b670bf36 in epoll_wait (epfd=13, events=0x7fa2931a7b80, maxevents=64, timeout=10) at ../sysdeps/unix/sysv/linux/epoll_wait.c:30
#1  0x00007fa2abfcaecf in gloo::transport::tcp::Loop::run() () from /lib/libgloo.so.0
#2  0x00007fa2ad6d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#3  0x00007fa2b668c1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#4  0x00007fa2b670c8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 3 (Thread 0x7fa2939a96c0 (LWP 514) "python3.11"):
#0  0x00007fa2b66ff26f in __GI___poll (fds=0x7fa284000b90, nfds=2, timeout=-1) at ../sysdeps/unix/sysv/linux/poll.c:29
#1  0x00007fa2b2280c61 in ?? () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#2  0x00007fa2ad6d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#3  0x00007fa2b668c1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#4  0x00007fa2b670c8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 2 (Thread 0x7fa2941aa6c0 (LWP 474) "python3.11"):
#0  0x00007fa2b66ff26f in __GI___poll (fds=0x7fa28c000e10, nfds=6, timeout=-1) at ../sysdeps/unix/sysv/linux/poll.c:29
#1  0x00007fa2b227e8f3 in ?? () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#2  0x00007fa2ad6d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#3  0x00007fa2b668c1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#4  0x00007fa2b670c8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 1 (Thread 0x7fa2b6602040 (LWP 470) "python3.11"):
#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, futex_word=0x5062a28) at ./nptl/futex-internal.c:57
#1  __futex_abstimed_wait_common (futex_word=futex_word@entry=0x5062a28, expected=expected@entry=0, clockid=clockid@entry=0, abstime=abstime@entry=0x0, private=private@entry=0, cancel=cancel@entry=true) at ./nptl/futex-internal.c:87
#2  0x00007fa2b6688f7b in __GI___futex_abstimed_wait_cancelable64 (futex_word=futex_word@entry=0x5062a28, expected=expected@entry=0, clockid=clockid@entry=0, abstime=abstime@entry=0x0, private=private@entry=0) at ./nptl/futex-internal.c:139
#3  0x00007fa2b668b5d8 in __pthread_cond_wait_common (abstime=0x0, clockid=0, mutex=0x50629d8, cond=0x5062a00) at ./nptl/pthread_cond_wait.c:503
#4  ___pthread_cond_wait (cond=0x5062a00, mutex=0x50629d8) at ./nptl/pthread_cond_wait.c:618
#5  0x00007fa2b22c2843 in c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#6  0x00007fa2b5ba9b4e in ?? () from /lib/x86_64-linux-gnu/libtorch_python.so.1.13
#7  0x00007fa2b5509a31 in ?? () from /lib/x86_64-linux-gnu/libtorch_python.so.1.13
#8  0x0000000000520622 in cfunction_call (func=<built-in method wait of PyCapsule object at remote 0x7fa2954a5650>, args=<optimized out>, kwargs=<optimized out>) at ../Objects/methodobject.c:542
#9  0x00000000004ee333 in _PyObject_MakeTpCall (tstate=0xa7ebd8 <_PyRuntime+166328>, callable=<built-in method wait of PyCapsule object at remote 0x7fa2954a5650>, args=<optimized out>, nargs=1, keywords=0x0) at ../Objects/call.c:214
#10 0x00000000005028aa in _PyEval_EvalFrameDefault (tstate=<optimized out>, frame=<optimized out>, throwflag=<optimized out>) at ../Python/ceval.c:4772
#11 0x00000000004f9f1b in _PyEval_EvalFrame (throwflag=0, frame=0x7fa2b6914020, tstate=0xa7ebd8 <_PyRuntime+166328>) at ../Include/internal/pycore_ceval.h:73
#12 _PyEval_Vector (args=0x0, argcount=0, kwnames=0x0, locals=<optimized out>, func=0x7fa2b657df80, tstate=0xa7ebd8 <_PyRuntime+166328>) at ../Python/ceval.c:6435
#13 PyEval_EvalCode (co=<code at remote 0x7fa2b658c710>, globals=<optimized out>, locals=<optimized out>) at ../Python/ceval.c:1154
#14 0x000000000062d403 in run_eval_code_obj (tstate=0xa7ebd8 <_PyRuntime+166328>, co=0x7fa2b658c710, globals={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated), locals={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated)) at ../Python/pythonrun.c:1714
#15 0x000000000062aa5f in run_mod (mod=<optimized out>, filename=<optimized out>, globals={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated), locals={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated), flags=<optimized out>, arena=<optimized out>) at ../Python/pythonrun.c:1735
#16 0x0000000000638770 in pyrun_file (fp=fp@entry=0x1024370, filename=filename@entry='/tmp/st/ddp_stall.py', start=start@entry=257, globals=globals@entry={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated), locals=locals@entry={'__name__': '__main__', '__doc__': "ddp_stall.py - a small PyTorch DDP job whose chosen rank stops (issue 16).\n\nEach rank trains a tiny linear model on random data with SGD under the gloo\nbackend, prints one line per step, and all-reduces a tensor after every\nstep.  The rank named by SMT_STALL_RANK sleeps forever just before the\nall-reduce of step SMT_STALL_STEP (default 2), so every other rank then\nwaits in dist.all_reduce: the stall smtd must notice and diagnose.\n\nRank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\nMASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master\nis then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).\nRuns with Debian's python3-torch (1.13) under /usr/bin/python3.\n\n  SMT_STEPS      steps to run (default 5)\n  SMT_STALL_RANK the rank that stops (default: none)\n  SMT_STALL_STEP the step at which it stops (default 2)\n", '__package__': None, '__loader__': <SourceFileLoader(name='__main__', path='/tmp/st/ddp_stall.py') at remo...(truncated), closeit=closeit@entry=1, flags=0x7ffd60a3c6c8) at ../Python/pythonrun.c:1630
#17 0x000000000063849b in _PyRun_SimpleFileObject (fp=fp@entry=0x1024370, filename=filename@entry='/tmp/st/ddp_stall.py', closeit=closeit@entry=1, flags=flags@entry=0x7ffd60a3c6c8) at ../Python/pythonrun.c:440
#18 0x0000000000638280 in _PyRun_AnyFileObject (fp=0x1024370, filename='/tmp/st/ddp_stall.py', closeit=1, flags=0x7ffd60a3c6c8) at ../Python/pythonrun.c:79
#19 0x0000000000636caf in pymain_run_file_obj (skip_source_first_line=0, filename='/tmp/st/ddp_stall.py', program_name='/usr/bin/python3.11') at ../Modules/main.c:360
#20 pymain_run_file (config=0xa64c20 <_PyRuntime+59904>) at ../Modules/main.c:379
#21 pymain_run_python (exitcode=0x7ffd60a3c6c4) at ../Modules/main.c:601
#22 Py_RunMain () at ../Modules/main.c:680
#23 0x000000000060a917 in Py_BytesMain (argc=<optimized out>, argv=<optimized out>) at ../Modules/main.c:734
#24 0x00007fa2b662a24a in __libc_start_call_main (main=main@entry=0x60a880 <main>, argc=argc@entry=3, argv=argv@entry=0x7ffd60a3c8f8) at ../sysdeps/nptl/libc_start_call_main.h:58
#25 0x00007fa2b662a305 in __libc_start_main_impl (main=0x60a880 <main>, argc=3, argv=0x7ffd60a3c8f8, init=<optimized out>, fini=<optimized out>, rtld_fini=<optimized out>, stack_end=0x7ffd60a3c8e8) at ../csu/libc-start.c:360
#26 0x000000000060a7b1 in _start ()
[Inferior 1 (process 470) detached]

