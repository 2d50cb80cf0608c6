/*
 * test_pyrender.c - values written as the toolkit's Python writes them
 * (json.dumps and str(), every expected string printed by Python 3.11 from
 * the same JSON), and the torch of the job's python3 found from its files
 * (pysite.c): a virtual environment, PYTHONPATH first, dist-info and
 * egg-info names, a link where version.py should be.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "pyrender.h"
#include "pysite.h"

static void test_python_text(void **state)
{
	static const struct { const char *in, *json, *str; } cases[] = {
		{ "0.1",
		  "0.1",
		  "0.1" },
		{ "1e-05",
		  "1e-05",
		  "1e-05" },
		{ "1e16",
		  "1e+16",
		  "1e+16" },
		{ "123.0",
		  "123.0",
		  "123.0" },
		{ "1.5e-07",
		  "1.5e-07",
		  "1.5e-07" },
		{ "0.30000000000000004",
		  "0.30000000000000004",
		  "0.30000000000000004" },
		{ "-0.0",
		  "-0.0",
		  "-0.0" },
		{ "1e22",
		  "1e+22",
		  "1e+22" },
		{ "123456789.123",
		  "123456789.123",
		  "123456789.123" },
		{ "true",
		  "true",
		  "True" },
		{ "null",
		  "null",
		  "None" },
		{ "42",
		  "42",
		  "42" },
		{ "\"plain\"",
		  "\"plain\"",
		  "plain" },
		{ "[1, 2.5, \"a\\u00e9\\ud83d\\ude00\\n\\u007f\\\"\\\\\"]",
		  "[1,2.5,\"a\\u00e9\\ud83d\\ude00\\n\\u007f\\\"\\\\\"]",
		  "[1, 2.5, 'a\303\251\360\237\230\200\\n\\x7f\"\\\\']" },
		{ "{\"b\": 1, \"a\": [true, false, null], \"c\": {\"z\": \"x\", \"y\": \"it's\"}}",
		  "{\"a\":[true,false,null],\"b\":1,\"c\":{\"y\":\"it's\",\"z\":\"x\"}}",
		  "{'b': 1, 'a': [True, False, None], 'c': {'z': 'x', 'y': \"it's\"}}" },
		{ "[\"it's\", \"both '\\\"\", \"tab\\t\", \"\\u0085\\u00a0\\u00ad\\u2028\\u200b\\ue000\", \"caf\\u00e9 \\u2603 \\ud83d\\ude00\", \"\\u0001\\u007f\"]",
		  "[\"it's\",\"both '\\\"\",\"tab\\t\",\"\\u0085\\u00a0\\u00ad\\u2028\\u200b\\ue000\",\"caf\\u00e9 \\u2603 \\ud83d\\ude00\",\"\\u0001\\u007f\"]",
		  "[\"it's\", 'both \\'\"', 'tab\\t', '\\x85\\xa0\\xad\\u2028\\u200b\\ue000', 'caf\303\251 \342\230\203 \360\237\230\200', '\\x01\\x7f']" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = json_loads(cases[i].in, JSON_DECODE_ANY, NULL);
		char *j, *s;

		assert_non_null(v);
		j = smt_py_json(v);
		s = smt_py_str(v);
		assert_string_equal(j, cases[i].json);
		assert_string_equal(s, cases[i].str);
		free(j);
		free(s);
		json_decref(v);
	}
}

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if (text) {
		assert_non_null(f = fopen(path, "w"));
		fputs(text, f);
		fclose(f);
	} else {
		mkdir(path, 0755);
	}
}

/* The torch version of ENV's python3, or "-" when none. */
static const char *torch(char **env)
{
	static char version[80], source[PATH_MAX];

	if (smt_pysite_torch_version(env, version, sizeof(version), source, sizeof(source)) < 0)
		return "-";
	return version;
}

static void test_torch_version(void **state)
{
	char path[PATH_MAX + 8], pp[PATH_MAX + 16], link[PATH_MAX], *py;
	char *env[3] = { path, NULL, NULL };

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/smt-pysite.XXXXXX");
	assert_non_null(mkdtemp(dir));
	py = realpath("/usr/bin/python3", NULL);
	if (!py || strncmp(strrchr(py, '/'), "/python3.", 9) != 0) {
		free(py);
		skip();
	}
	/* A venv without the system's packages, and none installed: no torch. */
	put("venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n");
	put("venv/bin", NULL);
	snprintf(link, sizeof(link), "%s/venv/bin/python3", dir);
	assert_int_equal(symlink("/usr/bin/python3", link), 0);
	snprintf(path, sizeof(path), "PATH=%s/venv/bin", dir);
	assert_string_equal(torch(env), "-");
	/* Its site-packages: torch/version.py is what torch.__version__ says. */
	snprintf(pp, sizeof(pp), "venv/lib/%s/site-packages/torch/version.py", strrchr(py, '/') + 1);
	put(pp, "# generated\n__version__ = '2.1.0+cu121'\ndebug = False\n");
	assert_string_equal(torch(env), "2.1.0+cu121");
	/* PYTHONPATH comes first, and a dist-info name is enough there. */
	put("extra/torch-2.3.1.dist-info/METADATA", "Name: torch\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=relative:%s/extra", dir);
	env[1] = pp;
	assert_string_equal(torch(env), "2.3.1");
	/* An egg-info name with its Python tag. */
	snprintf(link, sizeof(link), "%s/extra/torch-2.3.1.dist-info/METADATA", dir);
	unlink(link);
	snprintf(link, sizeof(link), "%s/extra/torch-2.3.1.dist-info", dir);
	rmdir(link);
	put("extra/torch-1.13.0a0-py3.11.egg-info/PKG-INFO", "Name: torch\n");
	assert_string_equal(torch(env), "1.13.0a0");
	/* A version.py that is a link is not read: root reads no file it was not given. */
	snprintf(link, sizeof(link), "%s/extra/torch-1.13.0a0-py3.11.egg-info/PKG-INFO", dir);
	unlink(link);
	snprintf(link, sizeof(link), "%s/extra/torch-1.13.0a0-py3.11.egg-info", dir);
	rmdir(link);
	put("extra/torch", NULL);
	put("elsewhere", "__version__ = '9.9.9'\n");
	snprintf(link, sizeof(link), "%s/extra/torch/version.py", dir);
	snprintf(pp, sizeof(pp), "%s/elsewhere", dir);
	assert_int_equal(symlink(pp, link), 0);
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s/extra", dir);
	assert_string_equal(torch(env), "2.1.0+cu121");
	/* No python3 on PATH: nothing. */
	env[0] = "PATH=/nonexistent";
	assert_string_equal(torch(env), "-");
	free(py);
	snprintf(link, sizeof(link), "rm -rf '%s'", dir);
	assert_int_equal(system(link), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_text),
		cmocka_unit_test(test_torch_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
