# systemd units, installed where a distribution puts them: under $(prefix)
# (so /usr/lib/systemd/system for --prefix=/usr; systemd also reads
# /usr/local/lib/systemd/system).  Override at install time, e.g.
#   make install systemdsystemunitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
systemdsystemunitdir = $(prefix)/lib/systemd/system
tmpfilesdir = $(prefix)/lib/tmpfiles.d

systemdsystemunit_DATA = systemd/smtd.service
EXTRA_DIST += systemd/smtd.service.in systemd/smtd.tmpfiles
CLEANFILES += systemd/smtd.service

# Substituted at make time, as the paths may be changed then (GNU Coding
# Standards): configure would leave "${exec_prefix}/sbin" in them.
systemd/smtd.service: $(srcdir)/systemd/smtd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/systemd/smtd.service.in > $@.tmp && mv $@.tmp $@

# tmpfiles.d wants NAME.conf.
install-data-local: install-tmpfiles
uninstall-local: uninstall-tmpfiles
install-tmpfiles:
	$(MKDIR_P) '$(DESTDIR)$(tmpfilesdir)'
	$(INSTALL_DATA) $(srcdir)/systemd/smtd.tmpfiles '$(DESTDIR)$(tmpfilesdir)/smtd.conf'
uninstall-tmpfiles:
	rm -f '$(DESTDIR)$(tmpfilesdir)/smtd.conf'
.PHONY: install-tmpfiles uninstall-tmpfiles
