# man pages
dist_man_MANS += man/libsmthostname.3
