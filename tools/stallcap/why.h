/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): why a sample stalled, from its STALLCAP_SEC_TIMES, _WAIT and
 * _TASK sections: a one-line verdict, the time breakdown, and the JSON of
 * every field (unavailable fields are null).
 */
#ifndef STALLCAP_WHY_H
#define STALLCAP_WHY_H

#include <stdio.h>
#include <linux/stallcap.h>

#define WHY_MAX_TASKS	(1 + STALLCAP_MAX_OWNER_HOPS)

/**
 * struct why_input - the sections of one sample that explain it
 * @state: the sample's STALLCAP_STATE_*
 * @cpu: the sample's CPU
 * @capture_ns: the sample's capture time
 * @times: the TIMES section copied to full size (missing tail zero), or
 *	NULL when the sample has none
 * @wait: the WAIT section, or NULL
 * @runners: task sections of role RUNNER (hop 0: on the thread's CPU;
 *	hop N: on the CPU of owner hop N)
 * @nr_runners: entries of @runners
 * @owners: task sections of role OWNER by hop (owners[0] is hop 1)
 * @nr_owners: entries of @owners
 */
struct why_input {
	__u8 state;
	__u32 cpu;
	__u64 capture_ns;
	const struct stallcap_sec_times *times;
	const struct stallcap_sec_wait *wait;
	const struct stallcap_sec_task *runners[WHY_MAX_TASKS];
	unsigned int nr_runners;
	const struct stallcap_sec_task *owners[STALLCAP_MAX_OWNER_HOPS];
	unsigned int nr_owners;
};

/**
 * why_collect() - find the sections of a sample
 * @in: output (zeroed first)
 * @s: the sample's fixed part
 * @secs: the first section
 * @len: bytes of sections
 * @times_copy: storage for a TIMES section shorter than this tool knows
 *
 * Return: 0, or -1 when a section's size is malformed.
 */
int why_collect(struct why_input *in, const struct stallcap_sample *s,
		const void *secs, size_t len,
		struct stallcap_sec_times *times_copy);

/** why_verdict() - the one-line verdict into @buf; its length. */
int why_verdict(const struct why_input *in, char *buf, size_t len);
/** why_breakdown() - the time breakdown line into @buf; its length. */
int why_breakdown(const struct stallcap_sec_times *t, char *buf, size_t len);
/** why_task_line() - one line naming a task (runner or owner). */
int why_task_line(const struct stallcap_sec_task *t, char *buf, size_t len);
/** why_json() - "times", "wait" and "tasks" members (with a leading comma). */
void why_json(FILE *out, const struct why_input *in);
const char *why_policy_name(__u8 policy);

/* from the rest of the tool (resolve.c, format_json.c) */
const char *sc_state_name(__u8 state);
void json_str(FILE *out, const char *s);

const char *why_wait_name(__u32 kind);

static inline const __u64 *why_task_frames(const struct stallcap_sec_task *t)
{
	return (const __u64 *)((const char *)t + t->fixed_size);
}

#endif /* STALLCAP_WHY_H */
