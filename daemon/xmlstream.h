/*
 * xmlstream.h - incremental decoder of the `mpirun --xml` dialect.
 *
 * mpirun (Open MPI 4.x) frames every chunk a rank writes as
 * <stdout rank="R">...</stdout> or <stderr rank="R">...</stderr>, prints its
 * own messages as <stderr> with no rank, its --display-map as
 * <map><host name="H"><process rank="R"/></host></map>, and writes other
 * text of its own (the "Data for JOB" line, the MPIR proctable) outside any
 * tag.  Inside a chunk `<`, `>`, `&` come as &lt; &gt; &amp; and every
 * control or non-ASCII byte as &#NNN; (NUL included), so the stream is not
 * well-formed XML and no XML library takes it: this decoder handles exactly
 * this dialect.
 *
 * Contract:
 * - Input may be cut anywhere (inside a tag, an entity, a chunk); feeding
 *   byte by byte gives the same callbacks' bytes as one big feed.
 * - Decoded bytes are handed over in runs of at most SMT_XML_RUN_MAX bytes;
 *   a chunk may arrive in several runs and a run never spans two chunks.
 *   Chunk boundaries carry no meaning (a rank's line may span chunks), so
 *   no end-of-chunk event exists.
 * - Entities: &lt; &gt; &amp; &quot; &apos;, &#D...; and &#xH...; (values
 *   0..255 give that byte, larger ones their UTF-8 encoding).  Anything
 *   else that starts with `&` passes through literally.
 * - Tags other than those above (<mpirun>, <map>, <allocation>, ...) are
 *   dropped.  A `<` that does not start a tag within SMT_XML_TAG_MAX bytes
 *   passes through literally as data of the current context.
 * - Memory is fixed: one decoder is a few KiB whatever the input.
 * - Never fails on any input; malformed input degrades to literal text.
 */
#ifndef SMT_XMLSTREAM_H
#define SMT_XMLSTREAM_H

#include <stddef.h>

/* The longest tag kept whole, and the longest run handed to a callback. */
#define SMT_XML_TAG_MAX 1024
#define SMT_XML_RUN_MAX (16 * 1024)
/* Largest rank number accepted in rank="R"; larger ones count as no rank. */
#define SMT_XML_RANK_MAX 0x7fffffff

enum smt_xml_stream { SMT_XML_STDOUT = 0, SMT_XML_STDERR = 1 };

struct smt_xml_handler {
	/* Decoded bytes of a <stdout>/<stderr> chunk.  RANK is -1 for a chunk
	 * with no rank attribute: a message of mpirun itself.  <stddiag>
	 * counts as stderr. */
	void (*data)(void *arg, int rank, enum smt_xml_stream stream,
		     const char *buf, size_t len);
	/* Decoded bytes outside any chunk, whitespace between tags included. */
	void (*text)(void *arg, const char *buf, size_t len);
	/* <process rank="R"/> inside <host name="HOST">: HOST is NUL-terminated
	 * and valid only during the call. */
	void (*map)(void *arg, int rank, const char *host);
};

struct smt_xml;

/* A decoder calling H's callbacks (any may be NULL) with ARG.  H is copied.
 * Returns 0 or -ENOMEM. */
int smt_xml_new(const struct smt_xml_handler *h, void *arg, struct smt_xml **out);

/* Decode LEN more bytes.  Callbacks run before it returns. */
void smt_xml_feed(struct smt_xml *x, const char *buf, size_t len);

/* End of input: an unfinished tag or entity is handed over as literal
 * text of its context.  The decoder may be fed again afterwards, as new. */
void smt_xml_finish(struct smt_xml *x);

void smt_xml_free(struct smt_xml *x);

#endif
