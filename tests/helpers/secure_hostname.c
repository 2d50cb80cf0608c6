/*
 * secure_hostname - what libsmthostname's gethostname() answers in this
 * process, which a test runs set-user-ID (secure-execution mode, AT_SECURE)
 * or not.
 *
 *   secure_hostname LIB
 *
 * A process in secure-execution mode ignores LD_PRELOAD paths, so the
 * library is loaded with dlopen() and its gethostname() called through
 * dlsym().  Prints "secure=0|1 host=NAME"; exits 1 when the library or its
 * symbol cannot be loaded, 2 on usage errors.  Built without the
 * sanitizers: their runtime does not run set-user-ID.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

int main(int argc, char **argv)
{
	int (*gh)(char *, size_t);
	char name[256];
	void *lib;

	if (argc != 2) {
		fprintf(stderr, "usage: secure_hostname LIB\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "secure_hostname: %s\n", dlerror());
		return 1;
	}
	*(void **)&gh = dlsym(lib, "gethostname");
	if (!gh) {
		fprintf(stderr, "secure_hostname: %s\n", dlerror());
		return 1;
	}
	if (gh(name, sizeof(name)) < 0) {
		perror("secure_hostname: gethostname");
		return 1;
	}
	printf("secure=%lu host=%s\n", getauxval(AT_SECURE), name);
	return 0;
}
