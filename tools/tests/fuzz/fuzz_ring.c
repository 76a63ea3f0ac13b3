// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the library's ring reader (stallcap_ring_init,
 * stallcap_ring_read) on a ring whose control page and data area come from
 * the input, and what the tool does with each record it delivers: the
 * sample and stall-end parsers, the grouping into stalls, and the
 * library's in-process reporter (its blocks written to /dev/null).
 *
 * Checks beyond the sanitizers: a record handed to the callback lies whole
 * inside the copy it was given, its size fits the data area, and the reader
 * never delivers more records than the area can hold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "fuzz_ring.h"

struct ctx {
	struct stalls st;
	struct stallcap_reporter *rep;
	__u64 data_size;
	unsigned long delivered;
	bool stop_early;
};

static void touch(const void *p, size_t n)
{
	volatile unsigned char sink = 0;
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		sink ^= c[i];
	(void)sink;
}

static int on_record(const struct stallcap_rec_header *rec, void *arg)
{
	struct ctx *c = arg;
	struct stallcap_sample_view v;
	struct stallcap_stall_end e;
	struct stallcap_watch_event ev;
	unsigned int i;
	int ret;

	if (rec->size < sizeof(*rec) || rec->size % 8 || rec->size > c->data_size ||
	    (rec->flags & STALLCAP_REC_F_BUSY) || rec->type == STALLCAP_REC_PAD)
		abort();
	touch(rec, rec->size);		/* ASan: all of it is ours */
	c->delivered++;
	if (!stallcap_sample_parse(rec, rec->size, &v)) {
		touch(v.kernel_ips, 8 * v.nr_kernel);
		touch(v.user_ips, 8 * v.nr_user);
		touch(v.stack, v.stack_size);
		touch(v.regs, v.regs ? v.regs_size : 0);
		for (i = 0; i < v.nr_tasks; i++) {
			touch(v.tasks[i].kernel_ips, 8 * v.tasks[i].nr_kernel);
			touch(v.tasks[i].user_ips, 8 * v.tasks[i].nr_user);
		}
	}
	if (!stallcap_watch_event_parse(rec, rec->size, &ev))
		touch(&ev, sizeof(ev));
	if (!stallcap_stall_end_parse(rec, rec->size, &e))
		touch(&e, sizeof(e));
	stalls_add(&c->st, rec);
	ret = c->rep ? stallcap_report_record(rec, c->rep) : 0;
	if (ret && ret != -ENOMEM)
		abort();	/* 0, or -ENOMEM: nothing else */
	return c->stop_early ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct fuzz_ring_hdr h;
	struct stallcap_ring_ctl *ctl;
	struct stallcap_ring r;
	struct ctx c;
	size_t len, area, off, n;
	unsigned char *map;
	static FILE *null;
	int i, ret;

	if (size < sizeof(h))
		return -1;
	memcpy(&h, data, sizeof(h));
	data += sizeof(h);
	size -= sizeof(h);
	area = (size_t)1 << (h.log2_size % (FUZZ_RING_MAX_LOG2 + 1));
	off = FUZZ_RING_PAGE + (h.data_offset_delta % 64);
	len = off + area;
	if (h.flags & FUZZ_RING_SHORT_MAP)
		len -= (h.data_offset_delta >> 8) % (area + 1);
	map = malloc(len);	/* exactly: ASan sees a read past the mapping */
	if (!map)
		return 0;
	memset(map, 0, len);
	ctl = (void *)map;
	ctl->abi_version = h.flags & FUZZ_RING_BAD_ABI ? 0 : STALLCAP_ABI_VERSION;
	ctl->ctl_size = sizeof(*ctl);
	ctl->data_offset = off;
	ctl->data_size = area;
	ctl->data_head = h.data_head;
	ctl->data_tail = h.data_tail;
	n = size < len - off ? size : (len > off ? len - off : 0);
	if (len > off)
		memcpy(map + off, data, n);

	memset(&c, 0, sizeof(c));
	stalls_init(&c.st);
	c.data_size = area;
	c.stop_early = h.flags & FUZZ_RING_STOP_EARLY;
	if (!null)
		null = fopen("/dev/null", "w");
	if (null && stallcap_reporter_new(&c.rep, null))
		c.rep = NULL;
	ret = stallcap_ring_init(&r, map, len);
	if (!ret) {
		if (area < sizeof(struct stallcap_rec_header) || off + area > len)
			abort();	/* init must refuse these */
		for (i = 0; i < 1 + h.reads % 8; i++) {
			ret = stallcap_ring_read(&r, on_record, &c);
			if (ret < 0 && ret != -EBADMSG)
				abort();
			if (ret <= 0)
				break;
		}
		if (c.delivered > area / 8 + 1)
			abort();	/* more records than the area holds: lapping */
	}
	stallcap_reporter_free(c.rep);	/* writes what it held */
	stalls_free(&c.st);
	free(map);
	return 0;
}
