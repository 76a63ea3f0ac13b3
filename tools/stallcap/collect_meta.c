// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): what the live collector sends the sink before the records
 * that need it.  Before the first record of a process, the process's maps
 * and the build-ids of its files, again when a frame falls outside them;
 * before a record that names a kernel symbol, that symbol, read again from
 * /proc/kallsyms when a module was loaded since.  A process that exited is
 * forgotten after a while.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect.h"

#define RESNAP_NS	(100 * NSEC_PER_MSEC)
/* a process silent this long is checked for exit (every second), forgotten if gone */
#define PRUNE_NS	(5 * NSEC_PER_SEC)
#define PRUNE_EVERY_NS	NSEC_PER_SEC
/* a module's kernel frame looks at /proc/modules at most this often */
#define MODULES_CHECK_NS	(100 * NSEC_PER_MSEC)

/* The record's pid comes from the ring: any value, looked up in constant time. */
struct pid_entry *pid_get(struct collector *c, __u32 pid)
{
	__u64 h = hash_u64(pid);
	struct pid_entry *e;
	struct hnode *n;

	htab_for_each_possible(&c->pids, n, h) {
		e = container_of(n, struct pid_entry, node);
		if (e->pid == pid)
			return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	if (htab_add(&c->pids, &e->node, h)) {
		free(e);
		return NULL;
	}
	e->all_next = c->all_pids;
	c->all_pids = e;
	return e;
}

/*
 * Snapshot a process's maps.  Records name it by its initial-namespace pid
 * (the key everywhere in the tool) and by its pid in the session opener's
 * namespace, which is the one /proc shows when the opener's namespace is
 * this tool's.
 */
static void snapshot(struct collector *c, struct pid_entry *e, __u32 ns_pid, bool quiet)
{
	__u32 proc_pid = c->same_pid_ns && ns_pid ? ns_pid : e->pid;
	struct sc_proc *p;
	int ret;

	e->snap_ns = now_ns(CLOCK_MONOTONIC);
	e->proc_pid = proc_pid;
	ret = procmaps_snapshot(proc_pid, c->bc, &p);
	if (ret) {
		if (!e->proc && !quiet)
			warnx_("pid %u: maps not readable (%s): its user frames stay unresolved",
			       e->pid, strerror(-ret));
		return;
	}
	p->pid = e->pid;
	sc_proc_free(e->proc);
	e->proc = p;
	if (c->sk->proc)
		c->err = c->sk->proc(c->sk, p);
}

/*
 * Snapshot process @pid when first seen, or again when one of its user
 * addresses (@ips, and @ip unless 0) is outside the text it had.  @quiet: a
 * process that only ran in a watched thread's place (a task section), gone
 * without a word if its maps cannot be read.
 */
static void see_pid(struct collector *c, __u32 pid, __u32 ns_pid, const __u64 *ips,
		    unsigned int nr, __u64 ip, bool quiet)
{
	struct pid_entry *e = pid_get(c, pid);
	unsigned int i;
	bool missing = false;

	if (!e)
		return;
	e->seen_ns = now_ns(CLOCK_MONOTONIC);
	if (!e->snap_ns) {
		snapshot(c, e, ns_pid, quiet);
		return;
	}
	if (!e->proc || now_ns(CLOCK_MONOTONIC) - e->snap_ns < RESNAP_NS)
		return;
	for (i = 0; i < nr && !missing; i++)
		missing = !sc_proc_is_text(e->proc, ips[i]);
	missing |= ip && !sc_proc_is_text(e->proc, ip);
	if (missing)
		snapshot(c, e, ns_pid, quiet);
}

/*
 * Snapshot a new process, or again when a frame is outside the known text;
 * likewise another process whose thread the sample names with user frames
 * (one that ran in the watched thread's place: its frames are resolved too).
 */
void see_process(struct collector *c, const struct stallcap_sample_view *v)
{
	const struct stallcap_regs_x86_64 *regs = stallcap_sample_regs_x86_64(v);
	const struct stallcap_task_view *t;
	unsigned int i;

	see_pid(c, v->s.pid, v->s.ns_pid, v->user_ips, v->nr_user,
		regs && !(v->s.flags & STALLCAP_SAMPLE_NO_USER) ? regs->ip : 0, false);
	for (i = 0; i < v->nr_tasks && i < STALLCAP_VIEW_MAX_TASKS; i++) {
		t = &v->tasks[i];
		if (t->nr_user && t->t.pid && t->t.pid != v->s.pid)
			see_pid(c, t->t.pid, t->t.ns_pid, t->user_ips, t->nr_user, 0, true);
	}
}

void pid_free(struct collector *c, struct pid_entry **pp)
{
	struct pid_entry *e = *pp;

	*pp = e->all_next;
	htab_del(&c->pids, &e->node);
	sc_proc_free(e->proc);
	free(e);
}

/* not in /proc any more (kill(0) tells without reading /proc) */
static bool proc_exited(__u32 pid)
{
	return pid && kill((pid_t)pid, 0) && errno == ESRCH;
}

/*
 * Live over days: a process silent for PRUNE_NS that exited is forgotten,
 * here and by the sink (its maps, its symbol tables), unless the sink still
 * needs it.  A new process with its pid starts afresh.
 */
void prune(struct collector *c, __u64 now)
{
	struct pid_entry **pp = &c->all_pids, *e;

	if (now - c->pruned_ns < PRUNE_EVERY_NS)
		return;
	c->pruned_ns = now;
	while ((e = *pp)) {
		if (now - e->seen_ns >= PRUNE_NS && proc_exited(e->proc_pid) &&
		    (!c->sk->proc_gone || !c->sk->proc_gone(c->sk, e->pid))) {
			if (c->o->verbose)
				fprintf(stderr, "%s: pid %u exited: its maps and symbols freed\n",
					prog, e->pid);
			pid_free(c, pp);
		} else {
			pp = &e->all_next;
		}
	}
}

static bool ksym_sent(struct collector *c, __u64 addr)
{
	__u64 h = hash_u64(addr);
	struct ksym_sent *k;
	struct hnode *n;

	htab_for_each_possible(&c->ksym_done, n, h)
		if (container_of(n, struct ksym_sent, node)->addr == addr)
			return true;
	k = calloc(1, sizeof(*k));
	if (!k)
		return true;
	k->addr = addr;
	if (htab_add(&c->ksym_done, &k->node, h)) {
		free(k);
		return true;
	}
	k->all_next = c->ksyms_sent;
	c->ksyms_sent = k;
	return false;
}

/* "name address" of each module of /proc/modules (its counts left out) */
static char *modules_now(void)
{
	FILE *f = fopen("/proc/modules", "re"), *m;
	char name[128], addr[32], *line = NULL, *out = NULL;
	size_t cap = 0, len = 0;

	if (!f)
		return NULL;
	m = open_memstream(&out, &len);
	while (m && getline(&line, &cap, f) > 0)
		if (sscanf(line, "%127s %*s %*s %*s %*s %31s", name, addr) == 2)
			fprintf(m, "%s %s\n", name, addr);
	free(line);
	fclose(f);
	if (!m || fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * The kernel's symbols, read when the session opens, before anything is
 * watched: read at the first sample instead, they cost the reader (seconds
 * of CPU in an emulated guest) at the moment the machine is busiest, a stall,
 * and on the CPU of the program it competes with (redis-benchmark lost half
 * its SET throughput to it on a 2-vCPU guest).  The modules loaded then are
 * noted first, for reload_ksyms().
 */
void load_ksyms(struct collector *c)
{
	if (c->ks_err != 1)
		return;
	c->modules = modules_now();
	c->ks_err = ksyms_load(c->ks, "/proc/kallsyms");
}

/*
 * A kernel frame outside the kernel's own text (in a module, or named by
 * nothing): in a module loaded since the symbols were read?  It may even
 * look like the tail of the module loaded before it.  /proc/modules, a few
 * lines, says whether the modules changed (looked at once per
 * MODULES_CHECK_NS at most); only then is /proc/kallsyms read again.
 * Return: true when the symbols were read again.
 */
static bool reload_ksyms(struct collector *c)
{
	__u64 now = now_ns(CLOCK_MONOTONIC);
	struct ksyms *ks;
	char *mods;

	if (c->ks_err || (c->modules_checked_ns &&
			  now - c->modules_checked_ns < MODULES_CHECK_NS))
		return false;
	c->modules_checked_ns = now;
	mods = modules_now();
	if (!mods || (c->modules && !strcmp(mods, c->modules))) {
		free(mods);
		return false;
	}
	ks = ksyms_new();
	if (!ks || ksyms_load(ks, "/proc/kallsyms")) {
		ksyms_free(ks);
		free(mods);
		return false;
	}
	ksyms_free(c->ks);
	c->ks = ks;
	free(c->modules);
	c->modules = mods;
	if (c->o->verbose)
		fprintf(stderr, "%s: kernel symbols read again (the modules changed)\n", prog);
	return true;
}

void see_kernel(struct collector *c, const struct stallcap_sample_view *v)
{
	const struct ksym *k = NULL;
	unsigned int i;
	__u64 addr;

	if (!v->nr_kernel)
		return;
	load_ksyms(c);
	if (c->ks_err && !c->ks_warned) {
		c->ks_warned = true;
		warnx_("/proc/kallsyms: %s: kernel frames stay unresolved",
		       strerror(-c->ks_err));
		hint_kallsyms(c->ks_err);
	}
	for (i = 0; i < v->nr_kernel && !c->ks_err; i++) {
		addr = v->kernel_ips[i] - ksym_frame_is_return(i, k);
		k = ksyms_find(c->ks, addr);
		/* (once per sample at most: reload_ksyms() waits MODULES_CHECK_NS) */
		if ((!k || k->mod) && addr && reload_ksyms(c))
			k = ksyms_find(c->ks, addr);
		if (k && !ksym_sent(c, k->addr) && c->sk->ksym)
			c->err = c->sk->ksym(c->sk, k);
	}
}
