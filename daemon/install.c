/* install.c - what the toolkit installs from the code directory (install.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "install.h"

static int has_file(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int smt_install_is_package(const char *code_dir, const char *program)
{
	if (!code_dir || !program || ends_with(program, ".sh"))
		return 0;
	return has_file(code_dir, "setup.py") || has_file(code_dir, "pyproject.toml");
}

const char *const *smt_install_argv(const char *code_dir, const char *program)
{
	static const char *const package[] = { "python3", "-m", "pip", "install", ".", NULL };
	static const char *const package_req[] = { "python3", "-m", "pip", "install", ".", "-r",
						   "requirements.txt", NULL };
	static const char *const req[] = { "python3", "-m", "pip", "install", "-r",
					   "requirements.txt", NULL };
	int requirements;

	if (!code_dir || !program)
		return NULL;
	requirements = has_file(code_dir, "requirements.txt");
	if (smt_install_is_package(code_dir, program))
		return requirements ? package_req : package;
	if (ends_with(program, ".py") && requirements)
		return req;
	return NULL;
}
