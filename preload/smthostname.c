/* smthostname.c - gethostname() returning the job's current_host. */
int smt_preload_placeholder_(void);
int smt_preload_placeholder_(void)
{
	return 0;
}
