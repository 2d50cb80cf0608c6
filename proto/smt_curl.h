/*
 * smt_curl.h - libcurl, loaded at run time by the code that speaks HTTP.
 *
 * Include this header instead of <curl/curl.h>.  Neither smtd nor smtctl is
 * linked with libcurl: its thirty-odd dependent libraries cost every exec
 * several milliseconds and most of smtd's resident memory, yet only the
 * leader of a multi-host job (peers.c, curluv.c) and smtctl's HTTP commands
 * use it.  Those call smt_curl_load() once before their first transfer; it
 * dlopens libcurl by the SONAME configure found (SMT_CURL_SONAME) and
 * resolves the functions below.  After it has returned 0 the usual curl_*
 * names call them, so the code reads like any libcurl program.
 *
 * smt_curl_load() returns 0 (also when libcurl is already loaded) or a
 * negative errno: -ELIBACC when the library cannot be opened, -ELIBBAD
 * when it lacks a function.  Then ERR holds one line naming the library,
 * saying what dlerror() said and what to install.  Calling a curl_*
 * function before a successful smt_curl_load() is a bug: it aborts.  The
 * loader is not thread-safe; call it from the thread that runs the loop.
 *
 * Only the functions in struct smt_curl_fns exist: any other curl_* call
 * is an undefined reference when linking, the reminder to add it here and
 * to the list in smt_curl.c.
 */
#ifndef SMT_CURL_H
#define SMT_CURL_H

#ifdef CURLINC_CURL_H
#error "include smt_curl.h instead of <curl/curl.h>: libcurl is not linked"
#endif

/* The type-checking macros of curl.h would call the real functions. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include <stddef.h>

/* Room for the longest line smt_curl_load() writes. */
#define SMT_CURL_ERR_MAX 512

struct smt_curl_fns {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *easy, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *easy);
	CURLcode (*easy_getinfo)(CURL *easy, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *easy);
	const char *(*easy_strerror)(CURLcode code);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
	CURLMcode (*multi_add_handle)(CURLM *multi, CURL *easy);
	CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *easy);
	CURLMcode (*multi_socket_action)(CURLM *multi, curl_socket_t fd, int ev_bitmask,
					 int *running_handles);
	CURLMsg *(*multi_info_read)(CURLM *multi, int *msgs_in_queue);
	CURLMcode (*multi_assign)(CURLM *multi, curl_socket_t fd, void *sockp);
	CURLMcode (*multi_cleanup)(CURLM *multi);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
	void (*slist_free_all)(struct curl_slist *list);
};

/* Load the libcurl the build was configured with (see above). */
int smt_curl_load(char *err, size_t errlen);

/*
 * Open SONAME and fill FNS with its functions, touching nothing else; the
 * library stays open on success.  Same results as smt_curl_load().  The
 * unit test uses it with names that must fail.
 */
int smt_curl_open(const char *soname, struct smt_curl_fns *fns, char *err, size_t errlen);

/* The loaded functions; aborts when smt_curl_load() has not succeeded. */
const struct smt_curl_fns *smt_curl(void);

/* curl.h defines these as themselves to count the arguments. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt

#define curl_global_init (smt_curl()->global_init)
#define curl_global_cleanup (smt_curl()->global_cleanup)
#define curl_easy_init (smt_curl()->easy_init)
#define curl_easy_setopt (smt_curl()->easy_setopt)
#define curl_easy_perform (smt_curl()->easy_perform)
#define curl_easy_getinfo (smt_curl()->easy_getinfo)
#define curl_easy_cleanup (smt_curl()->easy_cleanup)
#define curl_easy_strerror (smt_curl()->easy_strerror)
#define curl_multi_init (smt_curl()->multi_init)
#define curl_multi_setopt (smt_curl()->multi_setopt)
#define curl_multi_add_handle (smt_curl()->multi_add_handle)
#define curl_multi_remove_handle (smt_curl()->multi_remove_handle)
#define curl_multi_socket_action (smt_curl()->multi_socket_action)
#define curl_multi_info_read (smt_curl()->multi_info_read)
#define curl_multi_assign (smt_curl()->multi_assign)
#define curl_multi_cleanup (smt_curl()->multi_cleanup)
#define curl_slist_append (smt_curl()->slist_append)
#define curl_slist_free_all (smt_curl()->slist_free_all)

#endif
