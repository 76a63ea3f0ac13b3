// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: checking and splitting records.
 */
#include <errno.h>

#include "internal.h"

int stallcap_sample_parse(const void *rec, size_t len, struct stallcap_sample_view *v)
{
	const struct stallcap_sample *s = rec;
	size_t need;

	if (!rec || !v || len < sizeof(*s))
		return -EBADMSG;
	if (s->hdr.type != STALLCAP_REC_SAMPLE && s->hdr.type != STALLCAP_REC_USER_STACK)
		return -EBADMSG;
	if (s->hdr.size > len || s->hdr.size < sizeof(*s) || s->hdr.size % 8)
		return -EBADMSG;
	if (s->nr_kernel_frames > STALLCAP_MAX_FRAMES ||
	    s->nr_user_frames > STALLCAP_MAX_FRAMES ||
	    s->stack_size > STALLCAP_MAX_USER_STACK)
		return -EBADMSG;
	need = sizeof(*s) + 8 * ((size_t)s->nr_kernel_frames + s->nr_user_frames) +
	       (((size_t)s->stack_size + 7) & ~(size_t)7);
	if (need > s->hdr.size)
		return -EBADMSG;
	v->s = s;
	v->kernel_ips = (const __u64 *)(s + 1);
	v->nr_kernel = s->nr_kernel_frames;
	v->user_ips = v->kernel_ips + v->nr_kernel;
	v->nr_user = s->nr_user_frames;
	v->stack = v->user_ips + v->nr_user;
	v->stack_size = s->stack_size;
	return 0;
}

int stallcap_stall_end_parse(const void *rec, size_t len,
			     const struct stallcap_stall_end **endp)
{
	const struct stallcap_stall_end *e = rec;

	if (!rec || !endp || len < sizeof(*e))
		return -EBADMSG;
	if (e->hdr.type != STALLCAP_REC_STALL_END || e->hdr.size > len ||
	    e->hdr.size < sizeof(*e) || e->hdr.size % 8)
		return -EBADMSG;
	*endp = e;
	return 0;
}
