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
static char *rank[] = { "python3", "-m", "mpi4py", "/c/t.py", "--a", "x y", NULL };

static struct smt_mpiargv_in base(void)
{
	struct smt_mpiargv_in in = {
		.mpirun = "mpirun", .hosts = hosts2, .processes_per_host = 8, .num_processes = 16,
		.iface = "eth0", .preload = "/p.so", .smtctl = "/bin/smtctl",
		.rank_argv = rank,
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
	assert_string_equal(s, "mpirun|--host|algo-1:8,algo-2:8|-np|16|--allow-run-as-root|--display-map|--xml|--output-proctable|"
			       "-mca|btl_tcp_if_include|eth0|-mca|oob_tcp_if_include|eth0|-mca|plm_rsh_no_tree_spawn|1|"
			       "-bind-to|none|-map-by|slot|-mca|pml|ob1|-mca|btl|^openib|-mca|orte_abort_on_non_zero_status|1|"
			       "-mca|btl_vader_single_copy_mechanism|none|-x|NCCL_MIN_NRINGS=4|-x|NCCL_SOCKET_IFNAME=eth0|"
			       "-x|NCCL_DEBUG=INFO|-x|LD_LIBRARY_PATH|-x|PATH|-x|LD_PRELOAD=/p.so|"
			       "-mca|orte_launch_agent|/bin/smtctl exec-orted orted|python3|-m|mpi4py|/c/t.py|--a|x y");
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

/* SPEC §6's btl ^openib keeps the site's own choice (Debian's ^uct,openib,ofi). */
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
				  "-x|FI_PROVIDER=efa|-x|NCCL_PROTO=simple|-x|FI_EFA_USE_DEVICE_RDMA=1|python3"));
	/* One host: no launch agent. */
	assert_null(strstr(s, "orte_launch_agent"));
	free(s);
	in.instance_type = "ml.p5.48xlarge";
	s = build(&in);
	assert_non_null(strstr(s, "NCCL_PROTO=simple|python3"));
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
	in.custom = "-x FOO=\"a b\" --mca btl_tcp_if_include eth1 --NCCL_DEBUG WARN "
		    "-x LD_PRELOAD=/mine.so -bind-to socket --verbose -mca new_param 'v w' -x BAR";
	s = build(&in);
	assert_string_equal(s, "mpirun|--host|algo-1:8|-np|16|--allow-run-as-root|--display-map|--xml|--output-proctable|"
			       "-mca|btl_tcp_if_include|eth1|-mca|oob_tcp_if_include|eth0|-mca|plm_rsh_no_tree_spawn|1|"
			       "-bind-to|socket|-map-by|slot|-mca|pml|ob1|-mca|btl|^openib|-mca|orte_abort_on_non_zero_status|1|"
			       "-mca|btl_vader_single_copy_mechanism|none|-x|NCCL_MIN_NRINGS=4|-x|NCCL_SOCKET_IFNAME=eth0|"
			       "-x|NCCL_DEBUG=WARN|-x|LD_LIBRARY_PATH|-x|PATH|-x|LD_PRELOAD=/mine.so|"
			       "-x|FOO=a b|--verbose|-mca|new_param|v w|-x|BAR|python3|-m|mpi4py|/c/t.py|--a|x y");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_site_btl),
		cmocka_unit_test(test_single_host_hostfile_efa_aws),
		cmocka_unit_test(test_custom),
		cmocka_unit_test(test_custom_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
