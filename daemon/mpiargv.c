/* mpiargv.c - the mpirun command line (see mpiargv.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "mpiargv.h"
#include "smt_proto.h"
#include "shellwords.h"
#include "vec.h"

const char *const smt_mpiargv_aws_names[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_REGION", "AWS_DEFAULT_REGION", NULL,
};

/* EFA instance types of the toolkit, and those with RDMA reads as well. */
static const char *const efa_types[] = {
	"ml.g4dn.8xlarge", "ml.g4dn.12xlarge", "ml.g5.48xlarge", "ml.p3dn.24xlarge",
	"ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.trn1.32xlarge",
	"ml.p6e-gb200.36xlarge", NULL,
};
static const char *const efa_rdma_types[] = {
	"ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.trn1.32xlarge", "ml.p6e-gb200.36xlarge", NULL,
};

/*
 * One option of the command line: its words and, for those a custom option
 * may replace, a key ("mca:NAME", "x:NAME", "bind-to", "map-by").
 */
struct item {
	char *key;
	char *words[3];
	int n;
};

struct items {
	struct item *v;
	size_t n, cap;
};

static int add(struct items *it, const char *key, int n, const char *w0, const char *w1,
	       const char *w2)
{
	const char *w[3] = { w0, w1, w2 };
	struct item *item;

	if (SMT_VEC_RESERVE(it->v, it->cap, it->n + 1) < 0)
		return -ENOMEM;
	item = &it->v[it->n++];
	memset(item, 0, sizeof(*item));
	item->n = n;
	if (key && !(item->key = strdup(key)))
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (!(item->words[i] = strdup(w[i])))
			return -ENOMEM;
	return 0;
}

static int add_mca(struct items *it, const char *name, const char *value)
{
	char key[128];

	snprintf(key, sizeof(key), "mca:%s", name);
	return add(it, key, 3, "-mca", name, value);
}

static int add_x(struct items *it, const char *assignment)
{
	char key[256];
	size_t len = strcspn(assignment, "=");

	snprintf(key, sizeof(key), "x:%.*s", (int)len, assignment);
	return add(it, key, 2, "-x", assignment, NULL);
}

static struct item *find(struct items *it, const char *key)
{
	for (size_t i = 0; i < it->n; i++)
		if (it->v[i].key && strcmp(it->v[i].key, key) == 0)
			return &it->v[i];
	return NULL;
}

static int replace_word(struct item *item, int i, const char *word)
{
	char *w = strdup(word);

	if (!w)
		return -ENOMEM;
	free(item->words[i]);
	item->words[i] = w;
	return 0;
}

static int in_list(const char *const *list, const char *s)
{
	for (; s && *list; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

int smt_mpiargv_efa_type(const char *type)
{
	return in_list(efa_types, type);
}

int smt_mpiargv_efa_rdma_type(const char *type)
{
	return in_list(efa_rdma_types, type);
}

/* A flag of the defaults ("--oversubscribe"): a custom repeat is dropped. */
static int add_flag(struct items *it, const char *flag)
{
	char key[64];

	snprintf(key, sizeof(key), "flag:%s", flag);
	return add(it, key, 1, flag, NULL, NULL);
}

/* -x ASSIGNMENT after the custom options, unless one of them set it. */
static int add_x_unless(struct items *it, const char *assignment)
{
	char key[256];

	snprintf(key, sizeof(key), "x:%.*s", (int)strcspn(assignment, "="), assignment);
	return find(it, key) ? 0 : add_x(it, assignment);
}

/* the btl ^openib of smtd(8) The mpirun command line on top of the site's value (see mpiargv.h). */
static int btl_value(const char *site, char *out, size_t outlen)
{
	char copy[4096], *save = NULL;
	size_t used = 0;
	int exclude = 1;

	if (site && *site != '^' && *site != '\0')
		exclude = 0;
	else if (site && *site == '^')
		site++;
	if (snprintf(copy, sizeof(copy), "%s", site ? site : "") >= (int)sizeof(copy))
		return -ENAMETOOLONG;
	out[0] = '\0';
	if (exclude)
		used = (size_t)snprintf(out, outlen, "^openib");
	for (char *c = strtok_r(copy, ", ", &save); c; c = strtok_r(NULL, ", ", &save)) {
		if (strcmp(c, "openib") == 0)
			continue;
		used += (size_t)snprintf(out + used, used < outlen ? outlen - used : 0, "%s%s",
					 used ? "," : "", c);
		if (used >= outlen)
			return -ENAMETOOLONG;
	}
	/* A site list of nothing but openib: exclude it, as the toolkit does. */
	if (used == 0)
		snprintf(out, outlen, "^openib");
	return 0;
}

static int nhosts(const struct smt_mpiargv_in *in)
{
	int n = 0;

	while (in->hosts[n])
		n++;
	return n;
}

/* --host h1:N,h2:N (SMDataParallel on one host: the plain name), or the hostfile. */
static int hosts_option(struct items *it, const struct smt_mpiargv_in *in)
{
	char *hosts = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if (in->hostfile)
		return add(it, NULL, 2, "--hostfile", in->hostfile, NULL);
	f = open_memstream(&hosts, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; in->hosts[i]; i++) {
		fprintf(f, "%s%s", i ? "," : "", in->hosts[i]);
		if (in->kind == SMT_MPIARGV_MPI || nhosts(in) > 1)
			fprintf(f, ":%ld", in->processes_per_host);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	rc = add(it, NULL, 2, "--host", hosts, NULL);
	free(hosts);
	return rc;
}

/*
 * mpirun splits orte_launch_agent into words itself, and the workers'
 * shell runs them: the paths are quoted for it (shellwords.h).
 */
static int launch_agent(struct items *it, const struct smt_mpiargv_in *in, char *err,
			size_t errlen)
{
	char *smtctl = NULL, *socket = NULL, *value = NULL, bad = 0;
	int rc, custom_socket = in->socket && strcmp(in->socket, SMT_SOCKET_DEFAULT) != 0;

	rc = smt_shellwords_quote(in->smtctl, &smtctl, &bad);
	if (rc == 0 && custom_socket)
		rc = smt_shellwords_quote(in->socket, &socket, &bad);
	if (rc == -EINVAL) {
		snprintf(err, errlen,
			 "the path %s cannot be quoted for the workers' shell (byte 0x%02x)",
			 smtctl ? in->socket : in->smtctl, (unsigned char)bad);
		rc = -EILSEQ;
		goto out;
	}
	if (rc < 0)
		goto out;
	if ((custom_socket ? asprintf(&value, "%s --socket %s exec-orted orted", smtctl, socket) :
			     asprintf(&value, "%s exec-orted orted", smtctl)) < 0) {
		value = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = add_mca(it, "orte_launch_agent", value);
out:
	free(value);
	free(smtctl);
	free(socket);
	return rc;
}

/* What every launch forwards: LD_PRELOAD, the AWS credentials, the SM_* variables. */
static int forwarded(struct items *it, const struct smt_mpiargv_in *in)
{
	char buf[4200];
	int rc = 0;

	snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", in->preload);
	rc |= add_x(it, buf);
	for (size_t i = 0; smt_mpiargv_aws_names[i]; i++)
		if (smt_env_get(in->envp, smt_mpiargv_aws_names[i]))
			rc |= add_x(it, smt_mpiargv_aws_names[i]);
	for (size_t i = 0; in->forward && in->forward[i]; i++)
		rc |= add_x(it, in->forward[i]);
	return rc;
}

/* mpi.py's MasterRunner: the options before the custom ones. */
static int mpi_defaults(struct items *it, const struct smt_mpiargv_in *in, const char *btl)
{
	char buf[512];
	int rc = 0;

	rc |= add(it, NULL, 1, in->mpirun, NULL, NULL);
	rc |= hosts_option(it, in);
	snprintf(buf, sizeof(buf), "%ld", in->num_processes);
	rc |= add(it, NULL, 2, "-np", buf, NULL);
	rc |= add_flag(it, "--allow-run-as-root");
	/* The ranks' output is captured on their own hosts (smtd(8) OUTPUT): what
	 * still passes through mpirun's forwarding is tagged, as the toolkit
	 * does; --xml crashed mpirun on non-ASCII output. */
	rc |= add_flag(it, "--display-map");
	rc |= add_flag(it, "--tag-output");
	rc |= add_mca(it, "btl_tcp_if_include", in->iface);
	rc |= add_mca(it, "oob_tcp_if_include", in->iface);
	rc |= add_mca(it, "plm_rsh_no_tree_spawn", "1");
	rc |= add(it, "bind-to", 2, "-bind-to", "none", NULL);
	rc |= add(it, "map-by", 2, "-map-by", "slot", NULL);
	rc |= add_mca(it, "pml", "ob1");
	rc |= add_mca(it, "btl", btl);
	rc |= add_mca(it, "orte_abort_on_non_zero_status", "1");
	rc |= add_mca(it, "btl_vader_single_copy_mechanism", "none");
	rc |= add_x(it, "NCCL_MIN_NRINGS=4");
	snprintf(buf, sizeof(buf), "NCCL_SOCKET_IFNAME=%s", in->iface);
	rc |= add_x(it, buf);
	rc |= add_x(it, "NCCL_DEBUG=INFO");
	rc |= add_x(it, "LD_LIBRARY_PATH");
	rc |= add_x(it, "PATH");
	rc |= forwarded(it, in);
	if (smt_mpiargv_efa_type(in->instance_type)) {
		rc |= add_x(it, "FI_PROVIDER=efa");
		rc |= add_x(it, "NCCL_PROTO=simple");
	}
	if (smt_mpiargv_efa_rdma_type(in->instance_type))
		rc |= add_x(it, "FI_EFA_USE_DEVICE_RDMA=1");
	return rc ? -ENOMEM : 0;
}

/* Toolkit 4.5.0's _modelparallel_environment_command, after the custom options. */
static int mpi_modelparallel(struct items *it, const struct smt_mpiargv_in *in)
{
	int rc = 0;

	if (!in->modelparallel || in->torch_major < 0)
		return 0;
	rc |= add_x_unless(it, "NCCL_PROTO=simple");
	/* torch 2 and later hang without it (the toolkit's comment). */
	if (in->torch_major > 1)
		rc |= add_x_unless(it, "NCCL_ALGO=ring");
	return rc ? -ENOMEM : 0;
}

/* smdataparallel.py's SMDataParallelRunner: the options before the custom ones. */
static int smddp_defaults(struct items *it, const struct smt_mpiargv_in *in, const char *btl)
{
	char buf[512];
	int rc = 0, n = nhosts(in);

	rc |= add(it, NULL, 1, in->mpirun, NULL, NULL);
	rc |= hosts_option(it, in);
	snprintf(buf, sizeof(buf), "%ld", in->num_processes);
	rc |= add(it, NULL, 2, "-np", buf, NULL);
	rc |= add_flag(it, "--allow-run-as-root");
	rc |= add_flag(it, "--tag-output");
	rc |= add_flag(it, "--oversubscribe");
	rc |= add_mca(it, "btl_tcp_if_include", in->iface);
	rc |= add_mca(it, "oob_tcp_if_include", in->iface);
	rc |= add_mca(it, "plm_rsh_no_tree_spawn", "1");
	rc |= add_mca(it, "pml", "ob1");
	rc |= add_mca(it, "btl", btl);
	rc |= add_mca(it, "orte_abort_on_non_zero_status", "1");
	rc |= add_mca(it, "btl_vader_single_copy_mechanism", "none");
	snprintf(buf, sizeof(buf), "%d", n);
	rc |= add_mca(it, "plm_rsh_num_concurrent", buf);
	snprintf(buf, sizeof(buf), "NCCL_SOCKET_IFNAME=%s", in->iface);
	rc |= add_x(it, buf);
	rc |= add_x(it, "NCCL_DEBUG=INFO");
	rc |= add_x(it, "LD_LIBRARY_PATH");
	rc |= add_x(it, "PATH");
	rc |= add_x(it,
		    n > 1 ? "SMDATAPARALLEL_USE_HOMOGENEOUS=1" : "SMDATAPARALLEL_USE_SINGLENODE=1");
	rc |= add_x(it, "FI_PROVIDER=efa");
	rc |= add_x(it, "RDMAV_FORK_SAFE=1");
	rc |= forwarded(it, in);
	return rc ? -ENOMEM : 0;
}

/* SMDataParallel's variables after the custom options. */
static int smddp_after_custom(struct items *it, const struct smt_mpiargv_in *in)
{
	char buf[512];
	int rc = 0;

	if (smt_mpiargv_efa_type(in->instance_type))
		rc |= add_x_unless(it, "NCCL_PROTO=simple");
	if (smt_mpiargv_efa_rdma_type(in->instance_type))
		rc |= add_x_unless(it, "FI_EFA_USE_DEVICE_RDMA=1");
	if (nhosts(in) > 1) {
		snprintf(buf, sizeof(buf), "SMDATAPARALLEL_SERVER_ADDR=%s", in->hosts[0]);
		rc |= add_x_unless(it, buf);
		rc |= add_x_unless(it, "SMDATAPARALLEL_SERVER_PORT=7592");
		snprintf(buf, sizeof(buf), "SAGEMAKER_INSTANCE_TYPE=%s",
			 in->instance_type ? in->instance_type : "local");
		rc |= add_x_unless(it, buf);
	}
	return rc ? -ENOMEM : 0;
}

/* Merge the custom words into IT: replacements in place, the rest appended. */
static int custom(struct items *it, char **w, size_t n)
{
	char key[256];
	struct item *item;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		if (strcmp(w[i], "--NCCL_DEBUG") == 0 && i + 1 < n) {
			snprintf(key, sizeof(key), "NCCL_DEBUG=%s", w[++i]);
			rc = replace_word(find(it, "x:NCCL_DEBUG"), 1, key);
		} else if (strncmp(w[i], "--NCCL_DEBUG=", 13) == 0) {
			snprintf(key, sizeof(key), "NCCL_DEBUG=%s", w[i] + 13);
			rc = replace_word(find(it, "x:NCCL_DEBUG"), 1, key);
		} else if ((strcmp(w[i], "-mca") == 0 || strcmp(w[i], "--mca") == 0) && i + 2 < n) {
			snprintf(key, sizeof(key), "mca:%s", w[i + 1]);
			if ((item = find(it, key)))
				rc = replace_word(item, 2, w[i + 2]);
			else
				rc = add(it, key, 3, w[i], w[i + 1], w[i + 2]);
			i += 2;
		} else if (strcmp(w[i], "-x") == 0 && i + 1 < n) {
			snprintf(key, sizeof(key), "x:%.*s", (int)strcspn(w[i + 1], "="), w[i + 1]);
			if ((item = find(it, key)))
				rc = replace_word(item, 1, w[i + 1]);
			else
				rc = add(it, key, 2, w[i], w[i + 1], NULL);
			i++;
		} else if ((strcmp(w[i], "-bind-to") == 0 || strcmp(w[i], "--bind-to") == 0 ||
			    strcmp(w[i], "-map-by") == 0 || strcmp(w[i], "--map-by") == 0) &&
			   i + 1 < n) {
			const char *k = w[i][1] == '-' ? w[i] + 2 : w[i] + 1;

			if ((item = find(it, k)))
				rc = replace_word(item, 1, w[i + 1]);
			else
				rc = add(it, k, 2, w[i], w[i + 1], NULL);
			i++;
		} else {
			snprintf(key, sizeof(key), "flag:%s", w[i]);
			if (!find(it, key))
				rc = add(it, NULL, 1, w[i], NULL, NULL);
		}
	}
	return rc;
}

static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].key);
		for (int j = 0; j < 3; j++)
			free(it->v[i].words[j]);
	}
	free(it->v);
}

int smt_mpiargv_build(const struct smt_mpiargv_in *in, char ***argvp, char *err, size_t errlen)
{
	const char *type = in->instance_type ? in->instance_type : "local";
	struct items it = { 0 };
	char **words = NULL, **argv = NULL, btl[4096];
	const char *wrapper[6] = { NULL };
	size_t nwords = 0, total = 0, k = 0;
	int rc;

	*argvp = NULL;
	if (btl_value(in->site_btl, btl, sizeof(btl)) < 0) {
		snprintf(err, errlen, "the btl value is longer than %zu bytes", sizeof(btl) - 1);
		return -EINVAL;
	}
	rc = in->kind == SMT_MPIARGV_SMDDP ? smddp_defaults(&it, in, btl) :
					       mpi_defaults(&it, in, btl);
	if (rc == 0 && in->hosts[0] && in->hosts[1])
		rc = launch_agent(&it, in, err, errlen);
	if (rc < 0)
		goto out;
	if (in->custom) {
		rc = smt_shellwords_split(in->custom, &words, &nwords, err, errlen);
		if (rc < 0)
			goto out;
		if ((rc = custom(&it, words, nwords)) < 0)
			goto out;
	}
	rc = in->kind == SMT_MPIARGV_SMDDP ? smddp_after_custom(&it, in) :
					       mpi_modelparallel(&it, in);
	if (rc < 0)
		goto out;
	if (in->kind == SMT_MPIARGV_SMDDP && in->smddprun) {
		wrapper[0] = "smddprun";
	} else if (in->kind == SMT_MPIARGV_MPI && in->modelparallel && in->smddpmprun) {
		wrapper[0] = "smddpmprun";
		wrapper[1] = "-i";
		wrapper[2] = type;
		wrapper[3] = "--allow-bypass";
	}
	for (size_t i = 0; i < it.n; i++)
		total += (size_t)it.v[i].n;
	total += smt_strv_len(in->launcher) + smt_strv_len((char *const *)wrapper) +
		 smt_strv_len(in->rank_argv);
	rc = -ENOMEM;
	argv = calloc(total + 1, sizeof(*argv));
	if (!argv)
		goto out;
	for (size_t i = 0; i < it.n; i++)
		for (int j = 0; j < it.v[i].n; j++) {
			argv[k++] = it.v[i].words[j];
			it.v[i].words[j] = NULL;
		}
	/* The launcher first: it must be what orted starts, whatever wraps the program. */
	for (size_t i = 0; in->launcher && in->launcher[i]; i++)
		if (!(argv[k++] = strdup(in->launcher[i])))
			goto out;
	for (size_t i = 0; wrapper[i]; i++)
		if (!(argv[k++] = strdup(wrapper[i])))
			goto out;
	for (size_t i = 0; in->rank_argv[i]; i++)
		if (!(argv[k++] = strdup(in->rank_argv[i])))
			goto out;
	*argvp = argv;
	argv = NULL;
	rc = 0;
out:
	smt_strv_free(argv);
	smt_strv_free(words);
	items_free(&it);
	return rc;
}
