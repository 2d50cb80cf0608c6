# man pages (mdoc); tests/integration/ship_man.sh lints them and checks
# that they name every option and command the programs know.
dist_man_MANS += man/libsmthostname.3
dist_man_MANS += man/smtd.8 man/smtctl.1 man/smtd-config.5
