/* smt_curl.c - dlopen libcurl on first use (see smt_curl.h). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "smt_curl.h"

/* Debian's package that ships the SONAME configure found. */
#define CURL_PACKAGE "libcurl4"

/*
 * The loaded functions.  This is the one piece of process-wide state the
 * project keeps outside an event loop, on purpose: it stands in for what
 * the dynamic linker would have kept had libcurl been linked, a library
 * mapped once per process and shared by every handle and every loop in
 * it.  It is written once, by the first successful smt_curl_load(), and
 * only read after that.
 */
static struct smt_curl_fns loaded;
static int is_loaded;

/* Resolve curl_NAME into FNS->NAME; the cast from dlsym's void * to a
 * function pointer is what POSIX guarantees to work. */
#define RESOLVE(fns, h, name)                                                \
	do {                                                                 \
		if (((fns)->name = (__typeof__((fns)->name))dlsym((h), "curl_" #name)) == NULL) \
			goto no_symbol;                                      \
	} while (0)

int smt_curl_open(const char *soname, struct smt_curl_fns *fns, char *err, size_t errlen)
{
	struct smt_curl_fns f;
	void *h;

	/* RTLD_NOW: a libcurl too old for us fails here, not mid-transfer;
	 * RTLD_LOCAL: its symbols stay out of the way of everything else. */
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, errlen, "cannot load libcurl (%s): %s (install the %s package)",
			 soname, dlerror(), CURL_PACKAGE);
		return -ELIBACC;
	}
	RESOLVE(&f, h, global_init);
	RESOLVE(&f, h, global_cleanup);
	RESOLVE(&f, h, easy_init);
	RESOLVE(&f, h, easy_setopt);
	RESOLVE(&f, h, easy_perform);
	RESOLVE(&f, h, easy_getinfo);
	RESOLVE(&f, h, easy_cleanup);
	RESOLVE(&f, h, easy_strerror);
	RESOLVE(&f, h, multi_init);
	RESOLVE(&f, h, multi_setopt);
	RESOLVE(&f, h, multi_add_handle);
	RESOLVE(&f, h, multi_remove_handle);
	RESOLVE(&f, h, multi_socket_action);
	RESOLVE(&f, h, multi_info_read);
	RESOLVE(&f, h, multi_assign);
	RESOLVE(&f, h, multi_cleanup);
	RESOLVE(&f, h, slist_append);
	RESOLVE(&f, h, slist_free_all);
	*fns = f;
	return 0;

no_symbol:
	snprintf(err, errlen, "cannot use libcurl (%s): %s (install the %s package, 7.80 or later)",
		 soname, dlerror(), CURL_PACKAGE);
	dlclose(h);
	return -ELIBBAD;
}

int smt_curl_load(char *err, size_t errlen)
{
	int rc;

	if (is_loaded)
		return 0;
	rc = smt_curl_open(SMT_CURL_SONAME, &loaded, err, errlen);
	if (rc == 0)
		is_loaded = 1;
	return rc;
}

const struct smt_curl_fns *smt_curl(void)
{
	if (!is_loaded) {
		fputs("BUG: a curl_* function was called before smt_curl_load()\n", stderr);
		abort();
	}
	return &loaded;
}
