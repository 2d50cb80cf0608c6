# smtd is a thin main (smtd.c) over a library of modules, so that the unit
# tests link exactly the code that runs in production.  libcurl is not
# linked: proto/smt_curl.c loads it for the leader of a multi-host job only.
# The groups follow docs/ARCHITECTURE.md.
noinst_LIBRARIES += daemon/libsmtd.a
SMTD_LIBS = daemon/libsmtd.a proto/libsmtproto.a $(UV_LIBS) $(JANSSON_LIBS) \
	$(HTTP_PARSER_LIBS) $(SYSTEMD_LIBS)
AM_CPPFLAGS += $(UV_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS) $(SYSTEMD_CFLAGS)

# Small tools every module may use.
daemon_libsmtd_a_SOURCES = daemon/log.c daemon/log.h \
	daemon/dynbuf.c daemon/dynbuf.h \
	daemon/vec.c daemon/vec.h \
	daemon/strv.c daemon/strv.h \
	daemon/textesc.c daemon/textesc.h \
	daemon/ring.c daemon/ring.h

# The job's description: options, files, plan, mpirun argv, SM_* variables.
daemon_libsmtd_a_SOURCES += daemon/options.c daemon/options.h \
	daemon/jobconfig.c daemon/jobconfig.h \
	daemon/plan.c daemon/plan.h daemon/launch.c daemon/launch.h daemon/rankcmd.c daemon/rankcmd.h \
	daemon/shellwords.c daemon/shellwords.h \
	daemon/mpiargv.c daemon/mpiargv.h \
	daemon/ompiparams.c daemon/ompiparams.h \
	daemon/smenv.c daemon/smenv.h \
	daemon/pyrender.c daemon/pyrender.h \
	daemon/pysite.c daemon/pysite.h \
	daemon/pathsearch.c daemon/pathsearch.h

# Processes: starting them, reaping them, knowing them, the job on a host.
daemon_libsmtd_a_SOURCES += daemon/spawn.c daemon/spawn.h \
	daemon/reaper.c daemon/reaper.h \
	daemon/procfs.c daemon/procfs.h \
	daemon/rankcred.c daemon/rankcred.h \
	daemon/safefile.c daemon/safefile.h \
	daemon/pidwatch.c daemon/pidwatch.h \
	daemon/jobtree.c daemon/jobtree.h \
	daemon/cgroup.c daemon/cgroup.h \
	daemon/rankd.c daemon/rankd.h \
	daemon/hostjob.c daemon/hostjob.h \
	daemon/sshd.c daemon/sshd.h \
	daemon/logpipe.c daemon/logpipe.h

# The ranks' output: framing, merging, writing, keeping, the wire.
daemon_libsmtd_a_SOURCES += daemon/record.h \
	daemon/framer.c daemon/framer.h \
	daemon/merge.c daemon/merge.h \
	daemon/fdwriter.c daemon/fdwriter.h \
	daemon/format.c daemon/format.h \
	daemon/lineproto.c daemon/lineproto.h \
	daemon/outbox.c daemon/outbox.h \
	daemon/ranks.c daemon/ranks.h \
	daemon/output.c daemon/output.h

# How a failure is told: error lines, mpirun's messages, the report, the files.
daemon_libsmtd_a_SOURCES += daemon/errline.c daemon/errline.h \
	daemon/mpimsg.c daemon/mpimsg.h \
	daemon/report.c daemon/report.h \
	daemon/crash.c daemon/crash.h \
	daemon/restart.c daemon/restart.h \
	daemon/resultfile.c daemon/resultfile.h

# Stalls: reading live stacks, faulthandler dumps, naming the odd rank.
daemon_libsmtd_a_SOURCES += daemon/stackparse.c daemon/stackparse.h \
	daemon/pystack.c daemon/pystack.h \
	daemon/stackgroup.c daemon/stackgroup.h \
	daemon/stacks.c daemon/stacks.h \
	daemon/collect.c daemon/collect.h

# Talking: the control API, curl on the loop, the leader's channels, systemd.
daemon_libsmtd_a_SOURCES += daemon/api.c daemon/api.h \
	daemon/tcpchannel.c daemon/tcpchannel.h \
	daemon/unixlisten.c daemon/unixlisten.h \
	daemon/httpconn.c daemon/httpconn.h daemon/httpconn_int.h daemon/routes.c daemon/apiops.h \
	daemon/jsonrender.c daemon/jsonrender.h \
	daemon/curluv.c daemon/curluv.h \
	daemon/peers.c daemon/peers.h \
	daemon/notify.c daemon/notify.h

# The daemon and its roles.
daemon_libsmtd_a_SOURCES += daemon/daemon.c daemon/daemon.h daemon/daemon_int.h \
	daemon/leader.c daemon/worker.c daemon/apiview.c daemon/apiapply.c daemon/stall.c

sbin_PROGRAMS += smtd
smtd_SOURCES = daemon/smtd.c
smtd_LDADD = $(SMTD_LIBS)

# The pre-launch phase: built-in checks, the code directory's install, the
# preflight command (smtd(8) The rank command, Preflight).
daemon_libsmtd_a_SOURCES += daemon/preflight.c daemon/preflight.h \
	daemon/install.c daemon/install.h \
	daemon/prelaunch.c daemon/prelaunch.h
