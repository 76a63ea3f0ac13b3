/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* libstallcap: what the library's files share. */
#ifndef STALLCAP_LIB_INTERNAL_H
#define STALLCAP_LIB_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stallcap/stallcap.h>

/**
 * struct scl_ring_buf - a reader's private copy of the current record
 * @buf: malloc'd, 8-byte aligned, @cap bytes
 * @cap: the bytes @buf holds
 */
struct scl_ring_buf {
	struct stallcap_rec_header *buf;
	__u32 cap;
};

/**
 * struct stallcap_session - one open /dev/stallcap
 * @fd: the session fd
 * @map_lock: serialises the lazy mappings below
 * @ring_lock: the ring's single-consumer lock
 * @ring_map: mapping of the control page and data area (@ring_len bytes)
 * @ring_len: the bytes of @ring_map
 * @ring: view of @ring_map, published by @ring_ready (release/acquire)
 * @ring_ready: nonzero once @ring may be used
 * @ring_buf: private record copies of stallcap_ring_consume(), under @ring_lock
 * @slots: the slot area (@slots_len bytes), published with release
 * @slots_len: the bytes of @slots
 * @noop: opened with STALLCAP_OPEN_NOOP and no module: every call succeeds
 *	and does nothing; @noop_slot takes the inline slot stores
 * @noop_slot: the slot of a no-op session
 * @reporter: stallcap_report()'s state, under @ring_lock
 */
struct stallcap_session {
	int fd;
	pthread_mutex_t map_lock;
	pthread_mutex_t ring_lock;
	void *ring_map;
	size_t ring_len;
	struct stallcap_ring ring;
	int ring_ready;
	struct scl_ring_buf ring_buf;
	struct stallcap_slot *slots;
	size_t slots_len;
	int noop;
	struct stallcap_slot noop_slot;
	struct stallcap_reporter *reporter;
};

int scl_ioctl(int fd, unsigned long cmd, void *arg);
int scl_ring_read(struct stallcap_ring *r, stallcap_record_fn fn, void *ctx,
		  struct scl_ring_buf *b);

/* ---- in-process reporting (report.c, report_text.c) ---- */

/**
 * struct scl_out - text appended snprintf()-style
 * @buf: @len bytes; NULL with @len 0 to measure
 * @len: the bytes of @buf
 * @at: length of the whole text (past @len: cut, unless @grow)
 * @grow: realloc() @buf as needed (a malloc'd buffer)
 * @failed: a realloc() for @grow failed: the text is cut, still terminated
 */
struct scl_out {
	char *buf;
	size_t len, at;
	bool grow, failed;
};

/**
 * struct scl_run - consecutive samples of a stall with the stack of
 * sample @of, not yet written
 * @n: how many
 * @first: the first one's sample index
 * @last: the last one's sample index
 * @of: the index of the sample whose stack they share
 * @cpu: the first one's CPU
 * @first_ms: how far past the deadline the first was taken
 * @last_ms: how far past the deadline the last was taken
 * @state: the first one's thread state
 */
struct scl_run {
	unsigned int n;
	__u32 first, last, of, cpu;
	double first_ms, last_ms;
	__u8 state;
};

__attribute__((format(printf, 2, 3)))
void scl_put(struct scl_out *o, const char *fmt, ...);
void scl_put_header(struct scl_out *o, const struct stallcap_sample_view *v);
void scl_put_continued(struct scl_out *o, __u64 stall_id, __u32 ns_tid, const char comm[16]);
void scl_put_sample(struct scl_out *o, const struct stallcap_sample_view *v,
		    const struct stallcap_sample_view *user);
__u64 scl_stack_hash(const struct stallcap_sample_view *v,
		     const struct stallcap_sample_view *user);
void scl_run_add(struct scl_run *run, const struct stallcap_sample_view *v, __u32 of);
void scl_put_same(struct scl_out *o, const struct scl_run *run);
/* @rec's text as stallcap_format_record() gives it: 0, -EBADMSG */
int scl_format(struct scl_out *o, const struct stallcap_rec_header *rec);
/* @seen: samples of the stall written, -1 if not known */
void scl_put_end(struct scl_out *o, const struct stallcap_stall_end *e, long seen);

#endif /* STALLCAP_LIB_INTERNAL_H */
