/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): why a sample stalled, from its STALLCAP_SEC_TIMES, _WAIT and
 * _TASK sections: a one-line verdict, the time breakdown, and the JSON of
 * every field (unavailable fields are null).
 */
#ifndef STALLCAP_WHY_H
#define STALLCAP_WHY_H

#include <stdio.h>
#include <stallcap/stallcap.h>

#define WHY_MAX_TASKS	STALLCAP_VIEW_MAX_TASKS

/**
 * struct why_input - the sections of one sample that explain it
 * @state: the sample's STALLCAP_STATE_*
 * @cpu: the sample's CPU
 * @capture_ns: the sample's capture time
 * @times: the TIMES section (missing tail zero), or NULL
 * @wait: the WAIT section, or NULL
 * @runners: task sections of role RUNNER (hop 0: on the thread's CPU;
 *	hop N: on the CPU of owner hop N)
 * @nr_runners: entries of @runners
 * @owners: task sections of role OWNER in record order (hop 1 first)
 * @nr_owners: entries of @owners
 * @throttled: held off by its cgroup's CPU quota (STALLCAP_SAMPLE_THROTTLED)
 * @memstall: in a memory stall (STALLCAP_SAMPLE_MEMSTALL)
 */
struct why_input {
	__u8 state;
	bool throttled;
	bool memstall;
	__u32 cpu;
	__u64 capture_ns;
	const struct stallcap_sec_times *times;
	const struct stallcap_sec_wait *wait;
	const struct stallcap_task_view *runners[WHY_MAX_TASKS];
	unsigned int nr_runners;
	const struct stallcap_task_view *owners[WHY_MAX_TASKS];
	unsigned int nr_owners;
};

/** why_from_view() - the why-sections of a parsed sample */
void why_from_view(struct why_input *in, const struct stallcap_sample_view *v);

/** why_verdict() - the one-line verdict into @buf; its length. */
int why_verdict(const struct why_input *in, char *buf, size_t len);
/** why_verdict_class() - the verdict without amounts and ids (--group-by verdict). */
int why_verdict_class(const struct why_input *in, char *buf, size_t len);
/** why_breakdown() - the time breakdown line into @buf; its length. */
int why_breakdown(const struct stallcap_sec_times *t, char *buf, size_t len);
/** why_task_line() - one line naming a task (runner or owner). */
int why_task_line(const struct stallcap_sec_task *t, char *buf, size_t len);
/** why_json() - "times", "wait" and "tasks" members (with a leading comma). */
void why_json(FILE *out, const struct why_input *in);
const char *why_policy_name(__u8 policy);

const char *why_wait_name(__u32 kind);

#endif /* STALLCAP_WHY_H */
