/* test_ompiparams.c - MCA parameters as Open MPI reads them, in its order. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ompiparams.h"

static char dir[] = "/tmp/test_ompiparams.XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char path[512];

	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	const char *dirs[] = { "home", "home/.openmpi", "prefix", "prefix/bin", "prefix/etc" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, dirs[i]);
		if (mkdir(path, 0755) < 0)
			return -1;
	}
	put("prefix/bin/mpirun", "");
	put("prefix/etc/openmpi-mca-params.conf",
	    "# the installation's defaults\n"
	    "btl_base_warn_component_unused=0\n"
	    "  btl =  ^uct,openib,ofi   # as Debian ships it\n"
	    "pml = ^ucx\n");
	put("home/.openmpi/mca-params.conf", "pml = ob1\n");
	put("listed.conf", "btl = self,tcp\nbtl = self,vader,tcp\n");
	put("long.conf", "btl = 0123456789abcdef0123456789abcdef\n");
	return 0;
}

static int teardown(void **state)
{
	char path[512];
	const char *files[] = { "prefix/bin/mpirun", "prefix/etc/openmpi-mca-params.conf",
				"home/.openmpi/mca-params.conf", "listed.conf", "long.conf" };
	const char *dirs[] = { "prefix/etc", "prefix/bin", "prefix", "home/.openmpi", "home", "" };

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, dirs[i]);
		rmdir(path);
	}
	return 0;
}

static void test_file(void **state)
{
	char path[512], out[64];

	(void)state;
	snprintf(path, sizeof(path), "%s/prefix/etc/openmpi-mca-params.conf", dir);
	assert_int_equal(smt_ompi_param_in_file(path, "btl", out, sizeof(out)), 1);
	assert_string_equal(out, "^uct,openib,ofi");
	assert_int_equal(smt_ompi_param_in_file(path, "mtl", out, sizeof(out)), 0);
	/* A later line wins. */
	snprintf(path, sizeof(path), "%s/listed.conf", dir);
	assert_int_equal(smt_ompi_param_in_file(path, "btl", out, sizeof(out)), 1);
	assert_string_equal(out, "self,vader,tcp");
	snprintf(path, sizeof(path), "%s/long.conf", dir);
	assert_int_equal(smt_ompi_param_in_file(path, "btl", out, 8), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	assert_int_equal(smt_ompi_param_in_file(path, "btl", out, sizeof(out)), -ENOENT);
}

static void test_order(void **state)
{
	char mpirun[512], home[512], listed[600], out[64];

	(void)state;
	snprintf(mpirun, sizeof(mpirun), "%s/prefix/bin/mpirun", dir);
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	snprintf(listed, sizeof(listed), "OMPI_MCA_mca_base_param_files=%s/missing.conf:%s/listed.conf",
		 dir, dir);

	/* The installation's file, found next to mpirun. */
	char *env1[] = { home, NULL };
	assert_int_equal(smt_ompi_param("btl", env1, mpirun, out, sizeof(out)), 1);
	assert_string_equal(out, "^uct,openib,ofi");
	/* The user's file comes first. */
	assert_int_equal(smt_ompi_param("pml", env1, mpirun, out, sizeof(out)), 1);
	assert_string_equal(out, "ob1");
	/* No mpirun found: no installation file. */
	assert_int_equal(smt_ompi_param("btl", env1, NULL, out, sizeof(out)), 0);
	/* The environment comes first of all. */
	char *env2[] = { home, "OMPI_MCA_btl=^ofi", NULL };
	assert_int_equal(smt_ompi_param("btl", env2, mpirun, out, sizeof(out)), 1);
	assert_string_equal(out, "^ofi");
	/* A list of files replaces the default ones; unreadable ones are skipped. */
	char *env3[] = { home, listed, NULL };
	assert_int_equal(smt_ompi_param("btl", env3, mpirun, out, sizeof(out)), 1);
	assert_string_equal(out, "self,vader,tcp");
	char *env4[] = { home, "OMPI_MCA_mca_base_param_files=/dev/null", NULL };
	assert_int_equal(smt_ompi_param("btl", env4, mpirun, out, sizeof(out)), 0);
	/* Too long for the caller. */
	assert_int_equal(smt_ompi_param("btl", env1, mpirun, out, 4), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_order),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
