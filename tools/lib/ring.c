// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: the reader's side of the ring.
 *
 * The ordering follows the diagram in uapi/linux/stallcap.h; the labels A-D
 * below are the ones drawn there.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int stallcap_ring_init(struct stallcap_ring *r, void *map, size_t len)
{
	struct stallcap_ring_ctl *ctl = map;
	__u64 off, size;

	if (!r || !map || len < sizeof(*ctl) || (uintptr_t)map % 8)
		return -EINVAL;
	if (ctl->abi_version != STALLCAP_ABI_VERSION)
		return -EPROTO;
	off = ctl->data_offset;
	size = ctl->data_size;
	/* at least one record header: a header read never leaves the area */
	if (off < sizeof(*ctl) || off % 8 || size < sizeof(struct stallcap_rec_header) ||
	    (size & (size - 1)) || off > len || size > len - off)
		return -EBADMSG;
	r->ctl = ctl;
	r->data = (unsigned char *)map + off;
	r->mask = size - 1;
	return 0;
}

__u64 stallcap_ring_pending(const struct stallcap_ring *r)
{
	__u64 head = __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE);

	return head - __atomic_load_n(&r->ctl->data_tail, __ATOMIC_RELAXED);
}

/*
 * A record header (read once, into @h) is sane if the record lies inside
 * [tail, head) and the data area.  tail is 8-byte aligned (checked once per
 * read), so the header itself never straddles the end of the area.
 */
static int rec_check(const struct stallcap_ring *r, __u64 tail, __u64 head,
		     const struct stallcap_rec_header *h)
{
	if (h->size < sizeof(*h) || h->size % 8)
		return -EBADMSG;
	if (h->size > head - tail || (tail & r->mask) + h->size > r->mask + 1)
		return -EBADMSG;
	return 0;
}

/* Room for a private copy of a record of @size bytes. */
static int buf_reserve(struct scl_ring_buf *b, __u32 size)
{
	void *n;

	if (size <= b->cap)
		return 0;
	n = realloc(b->buf, size);
	if (!n)
		return -ENOMEM;
	b->buf = n;
	b->cap = size;
	return 0;
}

/*
 * Copy the record at @tail out of the ring.  The writer (the module, or any
 * thread of a watched program that maps the session) may change the shared
 * bytes at any time: the header is read once, checked, and the private copy
 * carries that checked header whatever the shared one says by now.
 */
static int rec_copy(const struct stallcap_ring *r, __u64 tail, __u64 head,
		    struct scl_ring_buf *b, struct stallcap_rec_header *hp)
{
	const unsigned char *src = r->data + (tail & r->mask);
	struct stallcap_rec_header h;
	int ret;

	/* B, pairs with C: the flags first, then the rest of the header */
	h.flags = __atomic_load_n(&((const struct stallcap_rec_header *)src)->flags,
				  __ATOMIC_ACQUIRE);
	if (h.flags & STALLCAP_REC_F_BUSY)
		return -EAGAIN;
	h.size = __atomic_load_n(&((const struct stallcap_rec_header *)src)->size,
				 __ATOMIC_RELAXED);
	h.type = __atomic_load_n(&((const struct stallcap_rec_header *)src)->type,
				 __ATOMIC_RELAXED);
	ret = rec_check(r, tail, head, &h);
	if (ret)
		return ret;
	*hp = h;
	if (h.type == STALLCAP_REC_PAD)
		return 0;
	ret = buf_reserve(b, h.size);
	if (ret)
		return ret;
	memcpy(b->buf, src, h.size);
	memcpy(b->buf, &h, sizeof(h));
	return 0;
}

int scl_ring_read(struct stallcap_ring *r, stallcap_record_fn fn, void *ctx,
		  struct scl_ring_buf *b)
{
	struct stallcap_rec_header h;
	__u64 head, tail, start, size;
	int n = 0, ret = 0, rc;

	if (!r || !r->ctl || !fn)
		return -EINVAL;
	size = r->mask + 1;
	head = __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE); /* pairs with A */
	start = tail = __atomic_load_n(&r->ctl->data_tail, __ATOMIC_RELAXED);
	/* the writer never gets more than the data area ahead of the reader */
	if (head - tail > size || tail % 8)
		return -EBADMSG;
	while (tail != head && n < INT_MAX) {
		ret = rec_copy(r, tail, head, b, &h);
		if (ret == -EAGAIN) {	/* busy: the writer finishes it soon */
			ret = 0;
			break;
		}
		if (ret)
			break;
		if (h.type != STALLCAP_REC_PAD) {
			rc = fn(b->buf, ctx);
			if (rc < 0) {
				ret = rc;
				break;
			}
			n++;
			if (rc > 0) {
				tail += h.size;
				break;
			}
		}
		tail += h.size;
	}
	if (tail != start) /* D, pairs with the module's acquire of data_tail */
		__atomic_store_n(&r->ctl->data_tail, tail, __ATOMIC_RELEASE);
	return ret ? ret : n;
}

int stallcap_ring_read(struct stallcap_ring *r, stallcap_record_fn fn, void *ctx)
{
	struct scl_ring_buf b = { NULL, 0 };
	int ret = scl_ring_read(r, fn, ctx, &b);

	free(b.buf);
	return ret;
}

int stallcap_ring_map(struct stallcap_session *s)
{
	struct stallcap_config cfg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	void *map;
	int ret;

	if (!s)
		return -EINVAL;
	if (s->noop || __atomic_load_n(&s->ring_ready, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&s->map_lock);
	ret = 0;
	if (s->ring_ready)
		goto out;
	ret = stallcap_session_get_config(s, &cfg);
	if (ret < 0)
		goto out;
	len = page + cfg.ring_bytes;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		   STALLCAP_MMAP_RING);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = stallcap_ring_init(&s->ring, map, len);
	if (ret < 0) {
		munmap(map, len);
		goto out;
	}
	s->ring_map = map;
	s->ring_len = len;
	__atomic_store_n(&s->ring_ready, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&s->map_lock);
	return ret;
}

struct stallcap_ring *stallcap_session_ring(struct stallcap_session *s)
{
	if (!s || !__atomic_load_n(&s->ring_ready, __ATOMIC_ACQUIRE))
		return NULL;
	return &s->ring;
}

int stallcap_ring_consume(struct stallcap_session *s, stallcap_record_fn fn, void *ctx)
{
	int ret;

	if (s && s->noop)
		return 0;
	if (!stallcap_session_ring(s))
		return -ENXIO;
	pthread_mutex_lock(&s->ring_lock);
	ret = scl_ring_read(&s->ring, fn, ctx, &s->ring_buf);
	pthread_mutex_unlock(&s->ring_lock);
	return ret;
}

int stallcap_ring_wait(struct stallcap_session *s, int timeout_ms)
{
	struct pollfd pfd;
	int ret;

	if (!s)
		return -EINVAL;
	if (s->noop) {		/* nothing ever comes: wait as asked */
		poll(NULL, 0, timeout_ms);
		return 0;
	}
	pfd.fd = s->fd;
	pfd.events = POLLIN;
	do
		ret = poll(&pfd, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	if (ret && (pfd.revents & (POLLERR | POLLNVAL)))
		return -EIO;
	return ret ? 1 : 0;
}

int stallcap_ring_counters(struct stallcap_session *s, __u64 *lost, __u64 *suppressed)
{
	struct stallcap_ring *r = stallcap_session_ring(s);

	if (s && s->noop) {
		if (lost)
			*lost = 0;
		if (suppressed)
			*suppressed = 0;
		return 0;
	}
	if (!r)
		return -ENXIO;
	if (lost)
		*lost = __atomic_load_n(&r->ctl->lost, __ATOMIC_RELAXED);
	if (suppressed)
		*suppressed = __atomic_load_n(&r->ctl->suppressed, __ATOMIC_RELAXED);
	return 0;
}
