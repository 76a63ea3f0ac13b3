// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap record --deadline: the threads of the watched processes that
 * were never watched.  The attach watches a thread from its first
 * event-loop wait (with --park, also from its first futex wait or sleep;
 * with --recv, from its first blocking socket receive, pipe or terminal
 * read);
 * a thread that never waits so is never reported, however long it runs: a
 * pool's worker fed through a condition variable (Apache's event MPM
 * without --park), a thread that only computes.  Once a second at most,
 * when the reader wakes anyway, the threads of the processes seen are
 * listed from /proc and the CPU time of those without a watch is read; at
 * the end, the ones that used more CPU than the deadline while recording
 * are named in a hint, so that such a stall is not missed in silence.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "collect.h"

#define SCAN_EVERY_NS	NSEC_PER_SEC
#define HINT_MIN_NS	(50 * NSEC_PER_MSEC)
#define HINT_MAX_NAMED	4
/* threads gone that used enough CPU: kept to be named, beyond that counted */
#define GONE_KEPT_MAX	64

/* A thread with a watch, or a process whose threads are listed */
struct id_entry {
	struct hnode node;
	struct id_entry *next;
	__u32 id;
	bool gone;		/* a process not in /proc any more (its pid not reused) */
};

/* A thread seen without a watch: its CPU time when first and last seen. */
struct unwatched {
	struct hnode node;
	struct unwatched *next;
	__u32 pid, tid;
	__u64 first_ticks, last_ticks;
	__u64 scan;		/* the last scan that saw it */
	bool gone;		/* kept after its thread went away */
	char comm[16];
};

static struct id_entry *id_find(const struct id_set *set, __u32 id)
{
	struct hnode *n;

	htab_for_each_possible(&set->h, n, hash_u64(id))
		if (container_of(n, struct id_entry, node)->id == id)
			return container_of(n, struct id_entry, node);
	return NULL;
}

static void id_add(struct id_set *set, __u32 id)
{
	struct id_entry *e;

	if (id_find(set, id))
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->id = id;
	if (htab_add(&set->h, &e->node, hash_u64(id))) {
		free(e);
		return;
	}
	e->next = set->all;
	set->all = e;
}

static void id_set_free(struct id_set *set)
{
	struct id_entry *e;

	while ((e = set->all)) {
		set->all = e->next;
		free(e);
	}
	htab_free(&set->h);
}

static bool is_watched(const struct collector *c, __u32 tid)
{
	return id_find(&c->watched, tid);
}

/**
 * unwatched_saw_watch() - thread @tid of process @pid (as /proc names
 * them) has a watch: its process's threads are listed from now on
 * @busy: and the watch saw its first busy period: the thread is watched
 */
void unwatched_saw_watch(struct collector *c, __u32 pid, __u32 tid, bool busy)
{
	id_add(&c->scanned, pid);
	if (busy)
		id_add(&c->watched, tid);
}

static struct unwatched *unwatched_get(struct collector *c, __u32 pid, __u32 tid)
{
	struct unwatched *u;
	struct hnode *n;

	htab_for_each_possible(&c->unwatched, n, hash_u64(tid)) {
		u = container_of(n, struct unwatched, node);
		if (u->tid == tid && u->pid == pid)
			return u;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pid = pid;
	u->tid = tid;
	u->first_ticks = ~0ULL;
	if (htab_add(&c->unwatched, &u->node, hash_u64(tid))) {
		free(u);
		return NULL;
	}
	u->next = c->unwatched_all;
	c->unwatched_all = u;
	return u;
}

/*
 * /proc/PID/task/TID/stat: its name, utime + stime and its start (clock
 * ticks since boot)
 */
static int thread_stat(__u32 pid, __u32 tid, char *comm, size_t len, __u64 *ticks,
		       __u64 *start)
{
	unsigned long long utime, stime, starttime;
	char path[64], buf[1024], *open_paren, *close_paren;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren ||
	    sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		   "%*d %*d %*d %*d %*d %*d %llu", &utime, &stime, &starttime) != 3)
		return -1;
	n = (size_t)(close_paren - open_paren - 1);
	if (n >= len)
		n = len - 1;
	memcpy(comm, open_paren + 1, n);
	comm[n] = 0;
	*ticks = utime + stime;
	*start = starttime;
	return 0;
}

/* Return: false if the process is gone */
static bool scan_process(struct collector *c, __u32 pid)
{
	struct dirent *d;
	char path[40];
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((d = readdir(dir))) {
		__u32 tid = (__u32)strtoul(d->d_name, NULL, 10);
		struct unwatched *u;
		__u64 ticks, start;
		char comm[16];

		if (!tid || is_watched(c, tid) ||
		    thread_stat(pid, tid, comm, sizeof(comm), &ticks, &start))
			continue;
		u = unwatched_get(c, pid, tid);
		if (!u)
			continue;
		/* all its time if it began while recording */
		if (u->first_ticks == ~0ULL)
			u->first_ticks = start >= c->started_ticks ? 0 : ticks;
		u->last_ticks = ticks;
		u->scan = c->unwatched_scans;
		memcpy(u->comm, comm, sizeof(u->comm));
	}
	closedir(dir);
	return true;
}

static __u64 hint_min_ns(const struct collector *c)
{
	return c->o->deadline_ns > HINT_MIN_NS ? c->o->deadline_ns : HINT_MIN_NS;
}

static __u64 cpu_ns(const struct unwatched *u)
{
	return (u->last_ticks - u->first_ticks) * (NSEC_PER_SEC / (__u64)sysconf(_SC_CLK_TCK));
}

/*
 * Forget the threads that the last scan did not see (gone, or watched
 * since): a thread that used enough CPU is kept to be named, the first
 * GONE_KEPT_MAX of them, the others counted.  The table holds what runs
 * now, however many threads a long recording sees come and go.
 */
static void forget_gone(struct collector *c)
{
	struct unwatched **pp = &c->unwatched_all, *u;

	while ((u = *pp)) {
		bool heavy = !is_watched(c, u->tid) && cpu_ns(u) >= hint_min_ns(c);

		if (u->gone || u->scan == c->unwatched_scans ||
		    (heavy && c->unwatched_kept < GONE_KEPT_MAX)) {
			c->unwatched_kept += !u->gone && u->scan != c->unwatched_scans;
			u->gone = u->gone || u->scan != c->unwatched_scans;
			pp = &u->next;
			continue;
		}
		c->unwatched_dropped += heavy;
		*pp = u->next;
		htab_del(&c->unwatched, &u->node);
		free(u);
	}
}

/**
 * unwatched_scan() - read the CPU time of the unwatched threads of the
 * processes watched (the command, the -p ones, those with a watch)
 * @now: CLOCK_MONOTONIC ns
 * @force: even if the last scan was less than a second ago
 */
void unwatched_scan(struct collector *c, __u64 now, bool force)
{
	struct id_entry *p;
	size_t i;

	if (!force && now - c->unwatched_scanned_ns < SCAN_EVERY_NS)
		return;
	c->unwatched_scanned_ns = now;
	if (c->cmd_pid > 0)
		id_add(&c->scanned, (__u32)c->cmd_pid);
	for (i = 0; i < c->o->npids; i++)
		id_add(&c->scanned, c->o->pids[i]);
	c->unwatched_scans++;
	for (p = c->scanned.all; p; p = p->next)
		if (!p->gone)
			p->gone = !scan_process(c, p->id);
	forget_gone(c);
}

/**
 * unwatched_hint() - name the threads never watched that used more CPU
 * than the deadline while recording
 */
void unwatched_hint(struct collector *c)
{
	unsigned int nr = c->unwatched_dropped, named = 0;
	char names[HINT_MAX_NAMED * 48] = "";
	struct unwatched *u;
	size_t len = 0;

	for (u = c->unwatched_all; u; u = u->next) {
		__u64 ns = cpu_ns(u);

		if (is_watched(c, u->tid) || ns < hint_min_ns(c))
			continue;
		nr++;
		if (named++ < HINT_MAX_NAMED && len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s (tid %u, %.1f s)",
						len ? ", " : "", u->comm, u->tid, ns / 1e9);
	}
	if (nr)
		warnx_("hint: %u thread%s of the watched processes never waited in an event-loop "
		       "call%s%s, so %s never watched, and used more CPU than the deadline while "
		       "recording: %s%s%s%s", nr, nr == 1 ? "" : "s",
		       c->o->park ? ", a futex wait or a sleep" : "",
		       c->o->recv ? ", a blocking socket receive, pipe or terminal read" : "",
		       nr == 1 ? "it was" : "they were",
		       names, nr > named || named > HINT_MAX_NAMED ? ", ..." : "",
		       c->o->park ? "" : " (workers fed by another thread through a condition "
		       "variable are watched with --park)",
		       c->o->recv ? "" : " (a thread per connection that waits for requests in a "
		       "blocking socket receive, a worker process fed through a pipe, is watched "
		       "with --recv)");
}

/* free what the scans kept */
void unwatched_free(struct collector *c)
{
	struct unwatched *u;

	while ((u = c->unwatched_all)) {
		c->unwatched_all = u->next;
		free(u);
	}
	htab_free(&c->unwatched);
	id_set_free(&c->watched);
	id_set_free(&c->scanned);
}
