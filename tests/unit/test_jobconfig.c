/* test_jobconfig.c - the job files: every rule of smtd-config(5), from memory. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jobconfig.h"

#define RCP "/r/input/config/resourceconfig.json"
#define HPP "/r/input/config/hyperparameters.json"

static struct smt_jobconfig *ok(const char *rc, const char *hp, const char *idc)
{
	struct smt_jobconfig *cfg = NULL;
	char err[512] = "";
	int r = smt_jobconfig_parse("/r", rc, rc ? strlen(rc) : 0, hp, hp ? strlen(hp) : 0, idc,
				    idc ? strlen(idc) : 0, NULL, &cfg, err, sizeof(err));

	if (r != 0)
		fail_msg("unexpected error: %s", err);
	return cfg;
}

static void bad(const char *rc, const char *hp, const char *msg)
{
	struct smt_jobconfig *cfg = NULL;
	char err[512] = "";

	assert_int_equal(smt_jobconfig_parse("/r", rc, rc ? strlen(rc) : 0, hp, hp ? strlen(hp) : 0,
					     NULL, 0, NULL, &cfg, err, sizeof(err)), -EINVAL);
	assert_null(cfg);
	assert_string_equal(err, msg);
	assert_null(strchr(err, '\n'));
}

static void test_resource(void **state)
{
	struct smt_jobconfig *c;

	(void)state;
	c = ok("{\"current_host\":\"algo-2\",\"hosts\":[\"algo-1\",\"algo-2\"],"
	       "\"current_group_name\":\"g\",\"current_instance_type\":\"ml.p4d.24xlarge\","
	       "\"instance_groups\":[{\"instance_group_name\":\"g\",\"instance_type\":\"t\","
	       "\"hosts\":[\"algo-2\"]}]}", NULL, NULL);
	assert_string_equal(c->current_host, "algo-2");
	assert_int_equal(c->nhosts, 2);
	assert_string_equal(c->hosts[1], "algo-2");
	assert_string_equal(c->iface, "eth0");
	assert_int_equal(c->ngroups, 1);
	assert_string_equal(c->groups[0].hosts[0], "algo-2");
	assert_string_equal(c->current_instance_type, "ml.p4d.24xlarge");
	assert_int_equal(c->mpi_enabled, -1);
	smt_jobconfig_free(c);
}

static void test_absent_resource(void **state)
{
	struct smt_jobconfig *c = NULL;
	char err[256];

	(void)state;
	assert_int_equal(smt_jobconfig_parse("/r", NULL, 0, NULL, 0, NULL, 0, "node-7", &c, err,
					     sizeof(err)), 0);
	assert_int_equal(c->nhosts, 1);
	assert_string_equal(c->current_host, "node-7");
	assert_int_equal(c->rc_present, 0);
	smt_jobconfig_free(c);
}

static void test_resource_errors(void **state)
{
	(void)state;
	bad("", NULL, RCP ": line 1 column 0: not valid UTF-8 JSON: '[' or '{' expected near end of file; fix the file");
	bad("[]", NULL, RCP ": the top level is an array, not a JSON object; write {...}");
	bad("{\"hosts\":[1],\"current_host\":\"a\"}", NULL, RCP ": hosts[0]: 1 is not a string; write host names as strings");
	bad("{\"hosts\":[\"a\"],\"current_host\":7}", NULL, RCP ": current_host: 7 is not in hosts; name this host, one of hosts");
	bad("{\"hosts\":[\"a\"],\"current_host\":\"a\",\"network_interface_name\":\"eth0/1\"}", NULL,
	    RCP ": network_interface_name: \"eth0/1\" is not a valid interface name (1 to 15 letters, digits, '_', '-', '.'); fix the name");
	bad("{\"hosts\":[\"a\"],\"current_host\":\"a\",\"network_interface_name\":\"abcdefghijklmnop\"}", NULL,
	    RCP ": network_interface_name: \"abcdefghijklmnop\" is not a valid interface name (1 to 15 letters, digits, '_', '-', '.'); fix the name");
	bad("{\"hosts\":[\"a\"],\"current_host\":\"a\",\"current_group_name\":\"x\",\"instance_groups\":[{\"instance_group_name\":\"g\",\"hosts\":[\"a\"]}]}", NULL,
	    RCP ": current_group_name: \"x\" is not one of instance_groups; fix the group name");
	bad("{\"hosts\":[\"a\"],\"current_host\":\"a\",\"hosts\":[\"a\"]}", NULL,
	    RCP ": line 1 column 41: not valid UTF-8 JSON: duplicate object key near '\"hosts\"'; fix the file");
}

static void test_hostnames(void **state)
{
	char name[300];

	(void)state;
	assert_true(smt_valid_hostname("algo-1"));
	assert_true(smt_valid_hostname("ip-10-0-0-1.ec2.internal"));
	assert_true(smt_valid_hostname("1host"));
	assert_false(smt_valid_hostname(""));
	assert_false(smt_valid_hostname("-a"));
	assert_false(smt_valid_hostname("a-"));
	assert_false(smt_valid_hostname("a..b"));
	assert_false(smt_valid_hostname("a."));
	assert_false(smt_valid_hostname("a_b"));
	assert_false(smt_valid_hostname("a:1"));
	memset(name, 'a', 63);
	name[63] = '\0';
	assert_true(smt_valid_hostname(name));
	name[63] = 'a';
	name[64] = '\0';
	assert_false(smt_valid_hostname(name));
	/* 253 characters in labels of 63 is valid; 254 is not. */
	memset(name, 'a', 253);
	for (int i = 63; i < 253; i += 64)
		name[i] = '.';
	name[253] = '\0';
	assert_true(smt_valid_hostname(name));
	name[253] = 'a';
	name[254] = '\0';
	assert_false(smt_valid_hostname(name));
	assert_true(smt_valid_ifname("eth0"));
	assert_true(smt_valid_ifname("ens5.100"));
	assert_false(smt_valid_ifname("eth0 "));
	assert_false(smt_valid_ifname("eth0:1"));
	assert_false(smt_valid_ifname(""));
}

static void test_depth(void **state)
{
	(void)state;
	assert_false(smt_json_too_deep("{\"a\":[[1]]}", 11, 3));
	assert_true(smt_json_too_deep("{\"a\":[[[1]]]}", 13, 3));
	/* Brackets inside strings do not count, nor escaped quotes. */
	assert_false(smt_json_too_deep("{\"[[[[\\\"[[\":1}", 15, 1));
}

static void test_hyperparameters(void **state)
{
	struct smt_jobconfig *c;
	const char *rc = "{\"hosts\":[\"a\",\"b\"],\"current_host\":\"a\"}";

	(void)state;
	c = ok(rc, "{\"sagemaker_program\":\"\\\"train.py\\\"\",\"sagemaker_mpi_enabled\":\"true\","
		   "\"sagemaker_mpi_num_of_processes_per_host\":\"2\",\"sagemaker_mpi_num_processes\":3,"
		   "\"lr\":\"0.5\",\"name\":\"plain text\",\"flag\":false}", NULL);
	assert_string_equal(c->program, "train.py");
	assert_int_equal(c->mpi_enabled, 1);
	assert_int_equal(c->processes_per_host, 2);
	assert_int_equal(c->num_processes, 3);
	assert_true(json_real_value(json_object_get(c->user_hps, "lr")) == 0.5);
	assert_string_equal(json_string_value(json_object_get(c->user_hps, "name")), "plain text");
	assert_true(json_is_false(json_object_get(c->user_hps, "flag")));
	assert_null(json_object_get(c->user_hps, "sagemaker_program"));
	/* The platform's keys are neither arguments nor framework parameters (toolkit 4.5.0). */
	assert_null(json_object_get(c->framework_params, "sagemaker_program"));
	assert_non_null(json_object_get(c->platform_hps, "sagemaker_program"));
	assert_non_null(json_object_get(c->framework_params, "sagemaker_mpi_enabled"));
	smt_jobconfig_free(c);

	/* A tuning job: SageMaker's _tuning_* keys and the platform's sagemaker_* ones are left out
	 * of the user hyperparameters; the other sagemaker_* ones are framework parameters. */
	c = ok(rc, "{\"_tuning_objective_metric\":\"\\\"validation:accuracy\\\"\",\"_tuning_other\":1,"
		   "\"sagemaker_region\":\"\\\"us-west-2\\\"\",\"sagemaker_container_log_level\":\"10\","
		   "\"sagemaker_job_name\":\"\\\"j\\\"\",\"sagemaker_submit_directory\":\"\\\"s3://b/k\\\"\","
		   "\"sagemaker_enable_cloudwatch_metrics\":false,\"sagemaker_s3_output\":\"\\\"s3://o\\\"\","
		   "\"default_user_module_name\":\"\\\"m\\\"\",\"sagemaker_estimator_module\":\"\\\"sagemaker.pytorch\\\"\","
		   "\"tuning\":\"1\"}", NULL);
	assert_int_equal(json_object_size(c->user_hps), 1);
	assert_non_null(json_object_get(c->user_hps, "tuning"));
	assert_int_equal(json_object_size(c->framework_params), 1);
	assert_non_null(json_object_get(c->framework_params, "sagemaker_estimator_module"));
	assert_int_equal(json_object_size(c->platform_hps), 9);
	assert_string_equal(c->region, "us-west-2");
	assert_int_equal(json_integer_value(c->log_level), 10);
	smt_jobconfig_free(c);

	bad(rc, "{\"sagemaker_mpi_num_of_processes_per_host\":\"0\"}",
	    HPP ": sagemaker_mpi_num_of_processes_per_host: 0 is not a positive integer (1 to 1000000); fix the value");
	bad(rc, "{\"sagemaker_mpi_num_processes\":\"abc\"}",
	    HPP ": sagemaker_mpi_num_processes: \"abc\" is not a positive integer (1 to 1000000); fix the value");
	bad(rc, "{\"sagemaker_mpi_enabled\":\"yes\"}",
	    HPP ": sagemaker_mpi_enabled: \"yes\" is not true or false; fix the value");
	bad(rc, "{\"sagemaker_program\":3}", HPP ": sagemaker_program: 3 is not a string; fix the value");
	bad(rc, "{\"sagemaker_distribution_instance_groups\":[\"x\"]}",
	    HPP ": sagemaker_distribution_instance_groups[0]: \"x\" is not one of the instance groups of " RCP "; fix the name");
	bad(rc, "{\"a=b\":1}", HPP ": \"a=b\": a hyperparameter name must be non-empty and without '='; rename it");
}

static void test_hp_decode(void **state)
{
	json_t *in = json_string("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
	json_t *out = smt_hp_decode(in);

	(void)state;
	/* Too deep to decode: kept as the string. */
	assert_ptr_equal(in, out);
	json_decref(out);
	json_decref(in);
}

static void test_channels(void **state)
{
	struct smt_jobconfig *c = NULL;
	const char *rc = "{\"hosts\":[\"a\"],\"current_host\":\"a\"}";
	const char *idc = "{\"../x\":{}}";
	char err[256];

	(void)state;
	assert_int_equal(smt_jobconfig_parse("/r", rc, strlen(rc), NULL, 0, idc, strlen(idc), NULL,
					     &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/r/input/config/inputdataconfig.json: \"../x\": not a valid channel name (1 to 64 letters, digits, '.', '_', '-'); rename the channel");
}

/* The hyperparameters of the distributions other than MPI. */
static void test_distribution_hps(void **state)
{
	struct smt_jobconfig *c;
	const char *rc = "{\"hosts\":[\"a\",\"b\"],\"current_host\":\"a\"}";

	(void)state;
	c = ok(rc, "{}", NULL);
	assert_int_equal(c->smddp_enabled, -1);
	assert_int_equal(c->pytorch_ddp_enabled, -1);
	assert_int_equal(c->torch_distributed_enabled, -1);
	assert_null(c->smddp_options);
	assert_null(c->sm_instance_type);
	assert_null(c->mp_parameters);
	smt_jobconfig_free(c);
	c = ok(rc, "{\"sagemaker_distributed_dataparallel_enabled\":\"true\",\"sagemaker_pytorch_ddp_enabled\":false,"
		   "\"sagemaker_torch_distributed_enabled\":\"false\","
		   "\"sagemaker_distributed_dataparallel_custom_mpi_options\":\"\\\"-x A=1\\\"\","
		   "\"sagemaker_instance_type\":\"\\\"ml.p4d.24xlarge\\\"\","
		   "\"mp_parameters\":\"{\\\"ddp_dist_backend\\\": \\\"auto\\\"}\"}", NULL);
	assert_int_equal(c->smddp_enabled, 1);
	assert_int_equal(c->pytorch_ddp_enabled, 0);
	assert_int_equal(c->torch_distributed_enabled, 0);
	assert_string_equal(c->smddp_options, "-x A=1");
	assert_string_equal(c->sm_instance_type, "ml.p4d.24xlarge");
	assert_string_equal(json_string_value(json_object_get(c->mp_parameters, "ddp_dist_backend")), "auto");
	/* mp_parameters stays a user hyperparameter (SM_HP_MP_PARAMETERS, --mp_parameters). */
	assert_ptr_equal(json_object_get(c->user_hps, "mp_parameters"), c->mp_parameters);
	smt_jobconfig_free(c);
	bad(rc, "{\"sagemaker_torch_distributed_enabled\":\"yes\"}",
	    HPP ": sagemaker_torch_distributed_enabled: \"yes\" is not true or false; fix the value");
	bad(rc, "{\"sagemaker_distributed_dataparallel_enabled\":1}",
	    HPP ": sagemaker_distributed_dataparallel_enabled: 1 is not true or false; fix the value");
	bad(rc, "{\"sagemaker_distributed_dataparallel_custom_mpi_options\":[1]}",
	    HPP ": sagemaker_distributed_dataparallel_custom_mpi_options: [1] is not a string; fix the value");
	bad(rc, "{\"sagemaker_instance_type\":2}", HPP ": sagemaker_instance_type: 2 is not a string; fix the value");
}

/* DNS names are not case-sensitive: algo-1 and ALGO-1
 * are one host listed twice. */
static void test_hosts_case_insensitive(void **state)
{
	(void)state;
	bad("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\",\"ALGO-1\"]}", NULL,
	    RCP ": hosts[1]: \"ALGO-1\" is the same host as hosts[0] \"algo-1\" (host names "
	    "are not case-sensitive); list each host once");
	bad("{\"current_host\":\"a.Example.com\",\"hosts\":[\"a.Example.com\",\"b\",\"A.example.COM\"]}",
	    NULL, RCP ": hosts[2]: \"A.example.COM\" is the same host as hosts[0] "
	    "\"a.Example.com\" (host names are not case-sensitive); list each host once");
	bad("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\",\"algo-2\"],\"instance_groups\":"
	    "[{\"instance_group_name\":\"g\",\"hosts\":[\"algo-2\",\"Algo-2\"]}]}", NULL,
	    RCP ": instance_groups[0].hosts[1]: \"Algo-2\" is the same host as "
	    "instance_groups[0].hosts[0] \"algo-2\" (host names are not case-sensitive); list "
	    "each host once");
	struct smt_jobconfig *c = ok("{\"current_host\":\"Algo-1\",\"hosts\":[\"Algo-1\",\"algo-2\"]}",
				     NULL, NULL);
	smt_jobconfig_free(c);
}

/* A count is a JSON integer or a string of digits; what
 * JSON would also read as an integer (" 2", "2\n") is refused. */
static void test_hp_counts_strict(void **state)
{
	static const struct { const char *value, *shown; } badv[] = {
		{ "\" 2\"", "\" 2\"" }, { "\"2 \"", "\"2 \"" }, { "\"2\\n\"", "\"2\\n\"" },
		{ "\"+2\"", "\"+2\"" }, { "\"02\"", "\"02\"" }, { "\"2.0\"", "2.0" },
		{ "\"1e-9\"", "1.0000000000000001e-9" }, { "2.5", "2.5" }, { "\"0\"", "0" },
		{ "\"\\t3\"", "\"\\t3\"" },
	};
	char hp[128], msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
		snprintf(hp, sizeof hp, "{\"sagemaker_mpi_num_processes\": %s}", badv[i].value);
		snprintf(msg, sizeof msg, HPP ": sagemaker_mpi_num_processes: %s is not a positive "
			 "integer (1 to 1000000); fix the value", badv[i].shown);
		bad("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}", hp, msg);
	}
	struct smt_jobconfig *c = ok("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}",
				     "{\"sagemaker_mpi_num_processes\": \"2\","
				     "\"sagemaker_mpi_num_of_processes_per_host\": 2}", NULL);
	assert_int_equal(c->num_processes, 2);
	assert_int_equal(c->processes_per_host, 2);
	smt_jobconfig_free(c);
}

/* Whatever a file or a name brings in, a message is one
 * line: control characters are escaped. */
static void test_messages_one_line(void **state)
{
	struct smt_jobconfig *cfg = NULL;
	char err[512];

	(void)state;
	bad("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"],\"instance_groups\":"
	    "[{\"instance_group_name\":\"g\\nERROR: x\",\"hosts\":[\"algo-1\"]},"
	    "{\"instance_group_name\":\"g\\nERROR: x\",\"hosts\":[\"algo-1\"]}]}", NULL,
	    RCP ": instance_groups[1].instance_group_name: \"g\\nERROR: x\" appears twice; give "
	    "each group its own name");
	bad("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}", "{\"a=\\r\\nb\": 1}",
	    HPP ": \"a=\\r\\nb\": a hyperparameter name must be non-empty and without '='; "
	    "rename it");
	const char *rc = "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}";
	assert_int_equal(smt_jobconfig_parse("/r", rc, strlen(rc), NULL, 0, NULL, 0,
					     "algo-1\x1b[1m", &cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, RCP ": hosts: the current host \"algo-1\\x1b[1m\" "
			    "(--current-host, SMTD_CURRENT_HOST) is not in hosts; give one of the "
			    "listed hosts");
	const char *idc = "{\"a\\nb\": {}}";
	assert_int_equal(smt_jobconfig_parse("/r", NULL, 0, NULL, 0, idc, strlen(idc), "algo-1",
					     &cfg, err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\n'));
	assert_non_null(strstr(err, "\"a\\nb\": not a valid channel name"));
}

/* Sagemaker_stall_timeout, a number of seconds written as the
 * options take it. */
static void test_stall_timeout(void **state)
{
	static const struct { const char *hp; double v; } good[] = {
		{ "30", 30 }, { "\"30\"", 30 }, { "\"2.5\"", 2.5 }, { "2.5", 2.5 },
		{ "\"1000000000\"", 1e9 },
	};
	static const struct { const char *hp, *shown; } badv[] = {
		{ "\" 30\"", "\" 30\"" }, { "\"30s\"", "\"30s\"" }, { "\"0\"", "\"0\"" },
		{ "0.5", "0.5" }, { "\"1e3\"", "\"1e3\"" }, { "\"2.\"", "\"2.\"" },
		{ "true", "true" }, { "\"-5\"", "\"-5\"" }, { "10000000000", "10000000000" },
	};
	const char *rc = "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}";
	char hp[128], msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(hp, sizeof hp, "{\"sagemaker_stall_timeout\": %s}", good[i].hp);
		struct smt_jobconfig *c = ok(rc, hp, NULL);
		assert_true(c->stall_timeout == good[i].v);
		smt_jobconfig_free(c);
	}
	struct smt_jobconfig *c = ok(rc, "{}", NULL);
	assert_true(c->stall_timeout == 0);
	smt_jobconfig_free(c);
	for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
		snprintf(hp, sizeof hp, "{\"sagemaker_stall_timeout\": %s}", badv[i].hp);
		snprintf(msg, sizeof msg, HPP ": sagemaker_stall_timeout: %s is not a number of "
			 "seconds from 1 to 1000000000; fix the value", badv[i].shown);
		bad(rc, hp, msg);
	}
}

/* sagemaker_max_restarts: 0 to 10000, written as the counts are (hp_whole). */
static void test_max_restarts(void **state)
{
	static const struct { const char *hp; long v; } good[] = {
		{ "\"0\"", 0 }, { "\"1\"", 1 }, { "3", 3 }, { "\"10000\"", 10000 },
	};
	static const struct { const char *hp, *shown; } badv[] = {
		{ "\"-1\"", "-1" }, { "\"01\"", "\"01\"" }, { "\" 2\"", "\" 2\"" },
		{ "\"10001\"", "10001" }, { "\"abc\"", "\"abc\"" }, { "true", "true" },
		{ "1.5", "1.5" },
	};
	const char *rc = "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}";
	char hp[128], msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(hp, sizeof hp, "{\"sagemaker_max_restarts\": %s}", good[i].hp);
		struct smt_jobconfig *c = ok(rc, hp, NULL);
		assert_int_equal(c->max_restarts, good[i].v);
		smt_jobconfig_free(c);
	}
	struct smt_jobconfig *c = ok(rc, "{}", NULL);
	assert_int_equal(c->max_restarts, -1);
	smt_jobconfig_free(c);
	for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
		snprintf(hp, sizeof hp, "{\"sagemaker_max_restarts\": %s}", badv[i].hp);
		snprintf(msg, sizeof msg, HPP ": sagemaker_max_restarts: %s is not a number of "
			 "restarts (0 to 10000); fix the value", badv[i].shown);
		bad(rc, hp, msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resource),
		cmocka_unit_test(test_absent_resource),
		cmocka_unit_test(test_resource_errors),
		cmocka_unit_test(test_hostnames),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_hyperparameters),
		cmocka_unit_test(test_hp_decode),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_distribution_hps),
		cmocka_unit_test(test_hosts_case_insensitive),
		cmocka_unit_test(test_hp_counts_strict),
		cmocka_unit_test(test_messages_one_line),
		cmocka_unit_test(test_stall_timeout),
		cmocka_unit_test(test_max_restarts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
