/* test_mpiargv.c - the mpirun command line and its custom options. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpiargv.h"
#include "strv.h"

static char *hosts2[] = { "algo-1", "algo-2", NULL };
static char *hosts1[] = { "algo-1", NULL };
static char *hosts4[] = { "algo-1", "algo-2", "algo-3", "algo-4", NULL };
static char *rank[] = { "python3", "-m", "mpi4py", "/c/t.py", "--a", "x y", NULL };
static char *launcher[] = { "/bin/smtctl", "rank", "--", NULL };

static struct smt_mpiargv_in base(void)
{
	struct smt_mpiargv_in in = {
		.mpirun = "mpirun", .hosts = hosts2, .processes_per_host = 8, .num_processes = 16,
		.iface = "eth0", .preload = "/p.so", .smtctl = "/bin/smtctl",
		.rank_argv = rank, .launcher = launcher, .torch_major = -1,
	};
	return in;
}

/* The argv joined by '|' for compact comparisons. */
static char *join(char **argv)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	for (size_t i = 0; argv[i]; i++)
		fprintf(f, "%s%s", i ? "|" : "", argv[i]);
	fclose(f);
	return s;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

static char *build(struct smt_mpiargv_in *in)
{
	char **argv, err[128], *s;

	assert_int_equal(smt_mpiargv_build(in, &argv, err, sizeof(err)), 0);
	s = join(argv);
	smt_strv_free(argv);
	return s;
}

static void test_defaults(void **state)
{
	struct smt_mpiargv_in in = base();
	char *s;

	(void)state;
	s = build(&in);
	assert_string_equal(s, "mpirun|--host|algo-1:8,algo-2:8|-np|16|--allow-run-as-root|--display-map|--tag-output|"
			       "-mca|btl_tcp_if_include|eth0|-mca|oob_tcp_if_include|eth0|-mca|plm_rsh_no_tree_spawn|1|"
			       "-bind-to|none|-map-by|slot|-mca|pml|ob1|-mca|btl|^openib|-mca|orte_abort_on_non_zero_status|1|"
			       "-mca|btl_vader_single_copy_mechanism|none|-x|NCCL_MIN_NRINGS=4|-x|NCCL_SOCKET_IFNAME=eth0|"
			       "-x|NCCL_DEBUG=INFO|-x|LD_LIBRARY_PATH|-x|PATH|-x|LD_PRELOAD=/p.so|"
			       "-mca|orte_launch_agent|/bin/smtctl exec-orted orted|"
			       "/bin/smtctl|rank|--|python3|-m|mpi4py|/c/t.py|--a|x y");
	free(s);
	/* A socket other than the default reaches the agent; no launcher, no words. */
	in.socket = "/tmp/s.sock";
	in.launcher = NULL;
	s = build(&in);
	assert_non_null(strstr(s, "|orte_launch_agent|/bin/smtctl --socket /tmp/s.sock exec-orted orted|python3|"));
	free(s);
}

/* The value that follows "-mca btl" in the argv built from IN. */
static char *btl_of(struct smt_mpiargv_in *in)
{
	char *s = build(in), *p = strstr(s, "|-mca|btl|"), *end, *v;

	assert_non_null(p);
	p += strlen("|-mca|btl|");
	end = strchr(p, '|');
	v = strndup(p, (size_t)(end - p));
	free(s);
	return v;
}

/* the btl ^openib of smtd(8) The mpirun command line keeps the site's own choice (Debian's ^uct,openib,ofi). */
static void test_site_btl(void **state)
{
	static const struct { const char *site, *want; } cases[] = {
		{ NULL, "^openib" },
		{ "", "^openib" },
		{ "^uct,openib,ofi", "^openib,uct,ofi" },
		{ "^ofi", "^openib,ofi" },
		{ "^openib", "^openib" },
		{ "self,vader,tcp", "self,vader,tcp" },
		{ "self,openib,tcp", "self,tcp" },
		{ "openib", "^openib" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct smt_mpiargv_in in = base();
		in.site_btl = cases[i].site;
		char *v = btl_of(&in);
		assert_string_equal(v, cases[i].want);
		free(v);
	}
	/* A custom -mca btl still replaces it, whatever the site says. */
	struct smt_mpiargv_in in = base();
	in.site_btl = "^uct,openib,ofi";
	in.custom = "-mca btl self,tcp";
	char *v = btl_of(&in);
	assert_string_equal(v, "self,tcp");
	free(v);
}

static void test_single_host_hostfile_efa_aws(void **state)
{
	struct smt_mpiargv_in in = base();
	char *env[] = { "AWS_SESSION_TOKEN=t", "AWS_REGION=r", "OTHER=1", NULL };
	char *fwd[] = { "SM_HOSTS", NULL };
	char *s;

	(void)state;
	in.hosts = hosts1;
	in.hostfile = "/run/smtd/hostfile";
	in.instance_type = "ml.p4d.24xlarge";
	in.envp = env;
	in.forward = fwd;
	s = build(&in);
	assert_non_null(strstr(s, "mpirun|--hostfile|/run/smtd/hostfile|-np|16|"));
	assert_non_null(strstr(s, "LD_PRELOAD=/p.so|-x|AWS_SESSION_TOKEN|-x|AWS_REGION|-x|SM_HOSTS|"
				  "-x|FI_PROVIDER=efa|-x|NCCL_PROTO=simple|-x|FI_EFA_USE_DEVICE_RDMA=1|/bin/smtctl|rank|--|python3"));
	/* One host: no launch agent. */
	assert_null(strstr(s, "orte_launch_agent"));
	free(s);
	in.instance_type = "ml.p5.48xlarge";
	s = build(&in);
	assert_non_null(strstr(s, "NCCL_PROTO=simple|/bin/smtctl|"));
	free(s);
	in.instance_type = "ml.c5.xlarge";
	s = build(&in);
	assert_null(strstr(s, "FI_PROVIDER"));
	free(s);
}

static void test_custom(void **state)
{
	struct smt_mpiargv_in in = base();
	char *s;

	(void)state;
	in.hosts = hosts1;
	in.custom = "-x FOO=\"a b\" --mca btl_tcp_if_include eth1 --NCCL_DEBUG WARN --tag-output "
		    "-x LD_PRELOAD=/mine.so -bind-to socket --verbose -mca new_param 'v w' -x BAR "
		    "--display-map -mca new_param x";
	s = build(&in);
	assert_string_equal(s, "mpirun|--host|algo-1:8|-np|16|--allow-run-as-root|--display-map|--tag-output|"
			       "-mca|btl_tcp_if_include|eth1|-mca|oob_tcp_if_include|eth0|-mca|plm_rsh_no_tree_spawn|1|"
			       "-bind-to|socket|-map-by|slot|-mca|pml|ob1|-mca|btl|^openib|-mca|orte_abort_on_non_zero_status|1|"
			       "-mca|btl_vader_single_copy_mechanism|none|-x|NCCL_MIN_NRINGS=4|-x|NCCL_SOCKET_IFNAME=eth0|"
			       "-x|NCCL_DEBUG=WARN|-x|LD_LIBRARY_PATH|-x|PATH|-x|LD_PRELOAD=/mine.so|"
			       "-x|FOO=a b|--verbose|-mca|new_param|x|-x|BAR|/bin/smtctl|rank|--|python3|-m|mpi4py|/c/t.py|--a|x y");
	free(s);
	in.custom = "--NCCL_DEBUG=TRACE";
	s = build(&in);
	assert_non_null(strstr(s, "|-x|NCCL_DEBUG=TRACE|"));
	assert_null(strstr(s, "--NCCL_DEBUG"));
	free(s);
}

static void test_custom_error(void **state)
{
	struct smt_mpiargv_in in = base();
	char **argv = NULL, err[128] = "";

	(void)state;
	in.custom = "-x 'FOO";
	assert_int_equal(smt_mpiargv_build(&in, &argv, err, sizeof(err)), -EINVAL);
	assert_null(argv);
	assert_string_equal(err, "unbalanced single quote at byte 4");
}

/* smdataparallel.py's option set, in its order, on one host without EFA. */
static void test_smddp_one_host(void **state)
{
	struct smt_mpiargv_in in = base();
	char *s;

	(void)state;
	in.kind = SMT_MPIARGV_SMDDP;
	in.hosts = hosts1;
	in.num_processes = 8;
	in.instance_type = "ml.g4dn.xlarge";
	in.smddprun = 1;
	s = build(&in);
	assert_string_equal(s, "mpirun|--host|algo-1|-np|8|--allow-run-as-root|--tag-output|--oversubscribe|"
			       "-mca|btl_tcp_if_include|eth0|-mca|oob_tcp_if_include|eth0|-mca|plm_rsh_no_tree_spawn|1|"
			       "-mca|pml|ob1|-mca|btl|^openib|-mca|orte_abort_on_non_zero_status|1|"
			       "-mca|btl_vader_single_copy_mechanism|none|-mca|plm_rsh_num_concurrent|1|"
			       "-x|NCCL_SOCKET_IFNAME=eth0|-x|NCCL_DEBUG=INFO|-x|LD_LIBRARY_PATH|-x|PATH|"
			       "-x|SMDATAPARALLEL_USE_SINGLENODE=1|-x|FI_PROVIDER=efa|-x|RDMAV_FORK_SAFE=1|"
			       "-x|LD_PRELOAD=/p.so|/bin/smtctl|rank|--|smddprun|python3|-m|mpi4py|/c/t.py|--a|x y");
	free(s);
	/* smddprun not installed: the ranks run without it. */
	in.smddprun = 0;
	s = build(&in);
	assert_non_null(strstr(s, "|-x|LD_PRELOAD=/p.so|/bin/smtctl|rank|--|python3|-m|mpi4py|"));
	free(s);
}

/* Four EFA hosts, custom options that repeat what comes before and after them. */
static void test_smddp_hosts_custom(void **state)
{
	struct smt_mpiargv_in in = base();
	char *env[] = { "AWS_REGION=r", NULL };
	char *fwd[] = { "SM_HOSTS", NULL };
	char *s;

	(void)state;
	in.kind = SMT_MPIARGV_SMDDP;
	in.hosts = hosts4;
	in.num_processes = 32;
	in.instance_type = "ml.p4d.24xlarge";
	in.envp = env;
	in.forward = fwd;
	in.socket = "/run/x.sock";
	in.site_btl = "^uct,openib,ofi";
	in.smddprun = 1;
	in.custom = "--oversubscribe -x FI_PROVIDER=sockets -x NCCL_PROTO=LL --NCCL_DEBUG=WARN "
		    "-mca plm_rsh_num_concurrent 2 -x SMDATAPARALLEL_SERVER_PORT=9999 -bind-to none";
	s = build(&in);
	assert_string_equal(s, "mpirun|--host|algo-1:8,algo-2:8,algo-3:8,algo-4:8|-np|32|--allow-run-as-root|--tag-output|"
			       "--oversubscribe|-mca|btl_tcp_if_include|eth0|-mca|oob_tcp_if_include|eth0|"
			       "-mca|plm_rsh_no_tree_spawn|1|-mca|pml|ob1|-mca|btl|^openib,uct,ofi|"
			       "-mca|orte_abort_on_non_zero_status|1|-mca|btl_vader_single_copy_mechanism|none|"
			       "-mca|plm_rsh_num_concurrent|2|-x|NCCL_SOCKET_IFNAME=eth0|-x|NCCL_DEBUG=WARN|"
			       "-x|LD_LIBRARY_PATH|-x|PATH|-x|SMDATAPARALLEL_USE_HOMOGENEOUS=1|-x|FI_PROVIDER=sockets|"
			       "-x|RDMAV_FORK_SAFE=1|-x|LD_PRELOAD=/p.so|-x|AWS_REGION|-x|SM_HOSTS|"
			       "-mca|orte_launch_agent|/bin/smtctl --socket /run/x.sock exec-orted orted|"
			       "-x|NCCL_PROTO=LL|-x|SMDATAPARALLEL_SERVER_PORT=9999|-bind-to|none|"
			       "-x|FI_EFA_USE_DEVICE_RDMA=1|-x|SMDATAPARALLEL_SERVER_ADDR=algo-1|"
			       "-x|SAGEMAKER_INSTANCE_TYPE=ml.p4d.24xlarge|"
			       "/bin/smtctl|rank|--|smddprun|python3|-m|mpi4py|/c/t.py|--a|x y");
	free(s);
	/* EFA without RDMA; no type at all: "local", no EFA variables. */
	in.custom = NULL;
	in.instance_type = "ml.g5.48xlarge";
	s = build(&in);
	assert_non_null(strstr(s, "|-x|NCCL_PROTO=simple|-x|SMDATAPARALLEL_SERVER_ADDR=algo-1|"
				  "-x|SMDATAPARALLEL_SERVER_PORT=7592|-x|SAGEMAKER_INSTANCE_TYPE=ml.g5.48xlarge|/bin/smtctl|"));
	assert_null(strstr(s, "FI_EFA_USE_DEVICE_RDMA"));
	free(s);
	in.instance_type = NULL;
	s = build(&in);
	assert_null(strstr(s, "NCCL_PROTO"));
	assert_non_null(strstr(s, "|-x|SAGEMAKER_INSTANCE_TYPE=local|"));
	free(s);
}

/* Toolkit 4.5.0's model-parallel additions on the MPI path. */
static void test_modelparallel(void **state)
{
	struct smt_mpiargv_in in = base();
	char *s;

	(void)state;
	in.hosts = hosts1;
	in.instance_type = "ml.c5.xlarge";
	in.modelparallel = 1;
	in.torch_major = 2;
	in.smddpmprun = 1;
	s = build(&in);
	assert_non_null(strstr(s, "|-x|LD_PRELOAD=/p.so|-x|NCCL_PROTO=simple|-x|NCCL_ALGO=ring|"
				  "/bin/smtctl|rank|--|smddpmprun|-i|ml.c5.xlarge|--allow-bypass|python3|-m|mpi4py|"));
	free(s);
	/* EFA already sets NCCL_PROTO: not twice.  A custom NCCL_ALGO wins. */
	in.instance_type = "ml.p4d.24xlarge";
	in.custom = "-x NCCL_ALGO=tree";
	s = build(&in);
	assert_non_null(strstr(s, "|-x|FI_PROVIDER=efa|-x|NCCL_PROTO=simple|-x|FI_EFA_USE_DEVICE_RDMA=1|"
				  "-x|NCCL_ALGO=tree|/bin/smtctl|rank|--|smddpmprun|-i|ml.p4d.24xlarge|"));
	assert_int_equal(count(s, "NCCL_PROTO"), 1);
	free(s);
	/* torch 1: no NCCL_ALGO; no SM_DLC_TORCH_VERSION: no NCCL variables;
	 * no smddpmprun: no wrapper; no type: "local". */
	in.custom = NULL;
	in.instance_type = NULL;
	in.torch_major = 1;
	s = build(&in);
	assert_non_null(strstr(s, "|-x|NCCL_PROTO=simple|/bin/smtctl|rank|--|smddpmprun|-i|local|--allow-bypass|"));
	free(s);
	in.torch_major = -1;
	in.smddpmprun = 0;
	s = build(&in);
	assert_non_null(strstr(s, "|-x|LD_PRELOAD=/p.so|/bin/smtctl|rank|--|python3|"));
	free(s);
	/* Without mp_parameters nothing is added, whatever is installed. */
	in.modelparallel = 0;
	in.torch_major = 2;
	in.smddpmprun = 1;
	s = build(&in);
	assert_null(strstr(s, "NCCL_ALGO"));
	assert_null(strstr(s, "smddpmprun"));
	free(s);
}

/* The workers' shell runs orte_launch_agent: its paths are quoted for it. */
static void test_launch_agent_quoting(void **state)
{
	struct smt_mpiargv_in in = base();
	char **argv = NULL, err[256] = "", *s;

	(void)state;
	in.smtctl = "/opt/my tools/smtctl";
	in.socket = "/run/a;b'c/s.sock";
	s = build(&in);
	assert_non_null(strstr(s, "|-mca|orte_launch_agent|/opt/my\\ tools/smtctl --socket /run/a\\;b\\'c/s.sock exec-orted orted|"
				  "/bin/smtctl|rank|--|"));
	free(s);
	in.socket = "/run/$(id)/s.sock";
	assert_int_equal(smt_mpiargv_build(&in, &argv, err, sizeof(err)), -EILSEQ);
	assert_null(argv);
	assert_string_equal(err, "the path /run/$(id)/s.sock cannot be quoted for the workers' shell (byte 0x24)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_site_btl),
		cmocka_unit_test(test_single_host_hostfile_efa_aws),
		cmocka_unit_test(test_custom),
		cmocka_unit_test(test_custom_error),
		cmocka_unit_test(test_smddp_one_host),
		cmocka_unit_test(test_smddp_hosts_custom),
		cmocka_unit_test(test_modelparallel),
		cmocka_unit_test(test_launch_agent_quoting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
