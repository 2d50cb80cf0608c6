noinst_LIBRARIES += proto/libsmtproto.a
proto_libsmtproto_a_SOURCES = proto/smt_proto.c proto/smt_proto.h \
	proto/smt_curl.c proto/smt_curl.h
