/*
 * options.h - smtd's command line and SMTD_* environment.
 *
 * smt_options_parse fills a struct smt_options from argv and an environment
 * block, command-line options winning over SMTD_* variables (smtd-config(5)).
 * Fields not given by either keep their "unset" value (NULL, -1 or a
 * negative timeout) so that the plan can fall back to the JSON files and
 * then to the built-in defaults; smt_plan_options() returns a copy with
 * every default filled in, which is what the rest of the daemon reads.
 * The struct points into argv/envp, which must outlive it; release it with
 * smt_options_free.
 */
#ifndef SMT_OPTIONS_H
#define SMT_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

enum smt_sshd_mode { SMT_SSHD_AUTO = 0, SMT_SSHD_ALWAYS, SMT_SSHD_NEVER };
/* A rank's stdout (smtd(8) A rank's standard output). */
enum smt_rank_stdout { SMT_RANK_STDOUT_PIPE = 0, SMT_RANK_STDOUT_TTY };
enum smt_job_cgroup_mode { SMT_JOB_CGROUP_AUTO = 0, SMT_JOB_CGROUP_NEVER };
/* How the leader reaches its workers after readiness (smtd(8) Channels). */
enum smt_channels { SMT_CHANNELS_TCP = 0, SMT_CHANNELS_SSH };

struct smt_options {
	const char *root;          /* --root, SMTD_ROOT; default /opt/ml */
	const char *socket_path;   /* --socket, SMTD_SOCKET */
	const char *socket_group;  /* --socket-group, SMTD_SOCKET_GROUP */
	const char *health_listen; /* --health-listen ADDR:PORT, SMTD_HEALTH_LISTEN */
	const char *mpirun_path;   /* --mpirun, SMTD_MPIRUN; default "mpirun" */
	const char *sshd_path;     /* --sshd-path, SMTD_SSHD_PATH; default /usr/sbin/sshd */
	const char *sshd_config;   /* --sshd-config, SMTD_SSHD_CONFIG: sshd -f FILE */
	const char *ssh_path;      /* --ssh-path, SMTD_SSH_PATH; default "ssh" */
	const char *smtctl_path;   /* --smtctl, SMTD_SMTCTL; smtctl on every host */
	const char *preload_path;  /* --preload, SMTD_PRELOAD; libsmthostname.so */
	const char *program;       /* --program, SAGEMAKER_PROGRAM (see plan.h) */
	const char *mpi_options;   /* --mpi-options, SMTD_MPI_OPTIONS: custom options */
	const char *current_host;  /* --current-host, SMTD_CURRENT_HOST: testing aid */
	const char *rank_log_dir;  /* --rank-log-dir, SMTD_RANK_LOG_DIR: DIR/rank-N.log */
	const char *progress_pattern; /* --progress-pattern, SMTD_PROGRESS_PATTERN */
	enum smt_job_cgroup_mode job_cgroup; /* --job-cgroup auto|never, SMTD_JOB_CGROUP */
	double stall_timeout;      /* --stall-timeout, SMTD_STALL_TIMEOUT; 0: not given,
				      -1: off ("0"), which the hyperparameter cannot undo */
	double start_timeout;      /* --start-timeout, SMTD_START_TIMEOUT; 0: off */
	const char *gpu_probe_root; /* SMTD_GPU_PROBE_ROOT: prefix of /proc/driver/nvidia/gpus
				     * and /dev/nvidiaN in the GPU count (tests) */
	/* The pre-launch phase (smtd(8) The rank command, Preflight). */
	int no_install;            /* --no-install, SMTD_NO_INSTALL: the code directory as it is */
	int gpu_check;             /* --no-gpu-check: 0; -1 unset (on) */
	int efa_check;             /* --no-efa-check: 0; -1 unset (on) */
	long long min_shm;         /* --min-shm SIZE, SMTD_MIN_SHM, bytes; 0 off; -1 unset (1 GiB,
				      a warning only when the ranks do not use PyTorch) */
	long long min_free_disk;   /* --min-free-disk SIZE, SMTD_MIN_FREE_DISK; 0 off; -1 unset */
	const char *preflight_command; /* --preflight-command, SMTD_PREFLIGHT_COMMAND */
	double preflight_timeout;  /* --preflight-timeout, SMTD_PREFLIGHT_TIMEOUT; -1 unset */
	enum smt_sshd_mode sshd_mode; /* --sshd auto|always|never, SMTD_SSHD */
	enum smt_rank_stdout rank_stdout; /* --rank-stdout pipe|tty, SMTD_RANK_STDOUT */
	enum smt_channels channels; /* --channels tcp|ssh, SMTD_CHANNELS */
	int mpi_enabled;           /* --mpi / --no-mpi, SMTD_MPI_ENABLED; -1 unset */
	const char *launch;        /* --launch standalone|mpi|smddp|torchrun, SMTD_LAUNCH:
				    * decides the launch alone (plan.h); NULL or "auto":
				    * the hyperparameters decide */
	long processes_per_host;   /* --processes-per-host, SMTD_PROCESSES_PER_HOST; -1 unset */
	long num_processes;        /* --num-processes, SMTD_NUM_PROCESSES; -1 unset */
	double wait_timeout;       /* seconds; --wait-timeout, SMTD_WAIT_TIMEOUT; 3600 */
	double launch_timeout;     /* --launch-timeout, SMTD_LAUNCH_TIMEOUT; 600 */
	double result_timeout;     /* --result-timeout, SMTD_RESULT_TIMEOUT; 60 */
	double peer_timeout;       /* --peer-timeout, SMTD_PEER_TIMEOUT; 10 */
	long channel_requests;     /* --channel-requests, SMTD_CHANNEL_REQUESTS; -1 unset:
				      SMT_PEERS_ONESHOTS_DEFAULT (peers.h) */
	double grace;              /* --grace, SMTD_GRACE; 30 */
	long max_restarts;         /* --max-restarts, SMTD_MAX_RESTARTS; -1 unset (the
				      hyperparameter, then 0) */
	double restart_delay;      /* --restart-delay, SMTD_RESTART_DELAY; 0 */
	int log_json;              /* --log-format text|json, SMTD_LOG_FORMAT */
	int debug;                 /* --debug, SMTD_DEBUG */
	int dry_run;               /* --dry-run */
	int json;                  /* --json (with --dry-run) */
	char **command;            /* after "--": the rank command, NULL-terminated; NULL if none */
	int command_argc;
	void *priv_;               /* owned storage */
};

/* Returned by smt_options_parse when --help or --version was printed. */
#define SMT_OPTIONS_EXIT 1

/*
 * Parse ARGV and ENVP (the SMTD_* and SAGEMAKER_PROGRAM variables) into
 * OPTS.  Returns 0, SMT_OPTIONS_EXIT after printing --help/--version on
 * stdout, or -EINVAL with a one-line message in ERR (a usage error, exit 2).
 * Paths and names may not hold control characters; --health-listen must
 * be an address the TCP listener takes (smt_api_parse_listen).
 */
int smt_options_parse(struct smt_options *opts, int argc, char **argv, char **envp,
		      char *err, size_t errlen);
void smt_options_free(struct smt_options *opts);

/*
 * TEXT in single quotes for a message, at most SMT_OPTIONS_QUOTE_MAX of its
 * bytes ("..." after), control characters escaped (\n, \r, \t, \xHH) so
 * that the message stays one line.  OUT has SMT_OPTIONS_QUOTE_SIZE bytes.
 */
#define SMT_OPTIONS_QUOTE_MAX 64
#define SMT_OPTIONS_QUOTE_SIZE (4 * SMT_OPTIONS_QUOTE_MAX + 8)
void smt_options_quote(const char *text, char *out, size_t outlen);

/* Counts are 1 to SMT_OPTIONS_COUNT_MAX, in digits.  Seconds are digits
 * with at most one decimal point, from SMT_OPTIONS_TIMEOUT_MIN (the
 * timeouts) or SMT_OPTIONS_GRACE_MIN (--grace) to SMT_OPTIONS_SECONDS_MAX. */
#define SMT_OPTIONS_COUNT_MAX 1000000
#define SMT_OPTIONS_TIMEOUT_MIN 1.0
#define SMT_OPTIONS_GRACE_MIN 0.1
#define SMT_OPTIONS_SECONDS_MAX 1e9

/* Built-in defaults (smtd-config(5), smtd(8) Roles). */
#define SMT_ROOT_DEFAULT "/opt/ml"
#define SMT_WAIT_TIMEOUT_DEFAULT   3600.0
#define SMT_LAUNCH_TIMEOUT_DEFAULT 600.0
#define SMT_RESULT_TIMEOUT_DEFAULT 60.0
#define SMT_PEER_TIMEOUT_DEFAULT   10.0
#define SMT_GRACE_DEFAULT          30.0
#define SMT_PREFLIGHT_TIMEOUT_DEFAULT 600.0
#define SMT_MIN_SHM_DEFAULT        (1024LL * 1024 * 1024)
#define SMT_MIN_FREE_DISK_DEFAULT  (1024LL * 1024 * 1024)

#endif
