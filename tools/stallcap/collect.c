// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): following a session's ring live.
 *
 * The ring comes from the application (--fd), from a system-wide reader
 * (--global, needs CAP_SYS_ADMIN), or from a session this tool opens for a
 * command it runs (the command finds it through STALLCAP_FD).  Before the
 * first record of a process reaches the sink, the process's maps and the
 * build-ids of its files do, and so do the kernel symbols a record names:
 * the output stays readable after the process exits or the module unloads.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record_file.h"
#include "tool.h"

#define POLL_MS		100
#define IDLE_POLL_MS	1000	/* nothing due by time: records and exits wake it */
#define GRACE_NS	(300 * NSEC_PER_MSEC)	/* for stall ends after exit */
#define RESNAP_NS	(100 * NSEC_PER_MSEC)
/* a process silent this long is checked for exit (every second), forgotten if gone */
#define PRUNE_NS	(5 * NSEC_PER_SEC)
#define PRUNE_EVERY_NS	NSEC_PER_SEC
/* a module's kernel frame looks at /proc/modules at most this often */
#define MODULES_CHECK_NS	(100 * NSEC_PER_MSEC)

struct pid_entry {
	struct hnode node;
	struct pid_entry *all_next;
	__u32 pid;
	__u32 proc_pid;		/* its pid in /proc, 0: not known yet */
	__u64 snap_ns;
	__u64 seen_ns;		/* its last record */
	struct sc_proc *proc;	/* latest snapshot, NULL if it failed */
};

/* A kernel symbol address already sent to the sink. */
struct ksym_sent {
	struct hnode node;
	struct ksym_sent *all_next;
	__u64 addr;
};

struct collector {
	const struct collect_opts *o;
	struct sc_sink *sk;
	struct stallcap_session *s;
	struct ksyms *ks;
	int ks_err;			/* 1: not loaded yet */
	char *modules;			/* /proc/modules' names and addresses then */
	__u64 modules_checked_ns;
	bool ks_warned;			/* the error was said */
	struct htab ksym_done;		/* struct ksym_sent by address */
	struct ksym_sent *ksyms_sent;
	struct htab pids;		/* struct pid_entry by pid */
	struct pid_entry *all_pids;
	__u64 pruned_ns;		/* last look for exited processes */
	struct buildid_cache *bc;
	__u64 lost, suppressed, records;
	bool same_pid_ns;		/* the records' ns ids are this tool's */
	int err;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/** collect_stop() - collect_run() returns after this round (a sink that is done). */
void collect_stop(void)
{
	stop_signal = SIGTERM;
}

void collect_opts_init(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->cfg.size = sizeof(o->cfg);
}

/* The record's pid comes from the ring: any value, looked up in constant time. */
static struct pid_entry *pid_get(struct collector *c, __u32 pid)
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
static void snapshot(struct collector *c, struct pid_entry *e, __u32 ns_pid)
{
	__u32 proc_pid = c->same_pid_ns && ns_pid ? ns_pid : e->pid;
	struct sc_proc *p;
	int ret;

	e->snap_ns = now_ns(CLOCK_MONOTONIC);
	e->proc_pid = proc_pid;
	ret = procmaps_snapshot(proc_pid, c->bc, &p);
	if (ret) {
		if (!e->proc)
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

/* Snapshot a new process, or again when a frame is outside the known text. */
static void see_process(struct collector *c, const struct stallcap_sample_view *v)
{
	const struct stallcap_regs_x86_64 *regs = stallcap_sample_regs_x86_64(v);
	struct pid_entry *e = pid_get(c, v->s.pid);
	unsigned int i;
	bool missing = false;

	if (!e)
		return;
	e->seen_ns = now_ns(CLOCK_MONOTONIC);
	if (!e->snap_ns) {
		snapshot(c, e, v->s.ns_pid);
		return;
	}
	if (!e->proc || now_ns(CLOCK_MONOTONIC) - e->snap_ns < RESNAP_NS)
		return;
	for (i = 0; i < v->nr_user && !missing; i++)
		missing = !sc_proc_is_text(e->proc, v->user_ips[i]);
	if (regs && regs->ip && !(v->s.flags & STALLCAP_SAMPLE_NO_USER))
		missing |= !sc_proc_is_text(e->proc, regs->ip);
	if (missing)
		snapshot(c, e, v->s.ns_pid);
}

static void pid_free(struct collector *c, struct pid_entry **pp)
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
static void prune(struct collector *c, __u64 now)
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
static void load_ksyms(struct collector *c)
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

static void see_kernel(struct collector *c, const struct stallcap_sample_view *v)
{
	const struct ksym *k;
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
		addr = v->kernel_ips[i] - (i > 0);
		k = ksyms_find(c->ks, addr);
		/* (once per sample at most: reload_ksyms() waits MODULES_CHECK_NS) */
		if ((!k || k->mod) && addr && reload_ksyms(c))
			k = ksyms_find(c->ks, addr);
		if (k && !ksym_sent(c, k->addr) && c->sk->ksym)
			c->err = c->sk->ksym(c->sk, k);
	}
}

/* @rec: the ring reader's private, checked copy (the ring is writable by the watched program) */
/*
 * A watch of the module: a process that --deadline starts watching (after
 * the attach, a fork or an exec) may run another program under a pid the
 * tool knows: its maps are read again at its next sample.  One that could
 * not be watched is said on stderr at once.
 */
static void see_watch(struct collector *c, const struct stallcap_rec_header *rec)
{
	struct stallcap_watch_event ev;
	struct pid_entry *e;

	if (stallcap_watch_event_parse(rec, rec->size, &ev))
		return;
	if (ev.event == STALLCAP_WATCH_STARTED && ev.tid == ev.pid) {
		e = pid_get(c, ev.pid);
		if (e)
			e->snap_ns = 0;
	} else if (ev.event == STALLCAP_WATCH_MISSED) {
		warnx_("%s %u (%.16s) could not be watched (watch limit, memory or a set-user-ID program): its stalls are not reported",
		       ev.tid == ev.pid ? "process" : "thread",
		       ev.ns_tid ? ev.ns_tid : ev.tid, ev.comm);
	}
}

static int on_record(const struct stallcap_rec_header *rec, void *arg)
{
	struct collector *c = arg;
	struct stallcap_sample_view v;

	if (rec->type == STALLCAP_REC_SAMPLE || rec->type == STALLCAP_REC_USER_STACK) {
		if (!stallcap_sample_parse(rec, rec->size, &v)) {
			see_process(c, &v);
			see_kernel(c, &v);
		}
	} else if (rec->type == STALLCAP_REC_WATCH) {
		see_watch(c, rec);
	}
	c->records++;
	if (!c->err && c->sk->record)
		c->err = c->sk->record(c->sk, rec);
	return c->err;
}

static int drain(struct collector *c)
{
	__u64 lost, suppressed;
	int ret;

	do
		ret = stallcap_ring_consume(c->s, on_record, c);
	while (ret > 0);
	if (ret < 0)
		return ret;
	if (c->sk->flush && c->sk->flush(c->sk))
		return -EIO;
	if (!stallcap_ring_counters(c->s, &lost, &suppressed) &&
	    (lost != c->lost || suppressed != c->suppressed)) {
		c->lost = lost;
		c->suppressed = suppressed;
		if (c->sk->lost)
			return c->sk->lost(c->sk, lost, suppressed);
	}
	return 0;
}

static int open_session(struct collector *c)
{
	const struct collect_opts *o = c->o;
	struct stallcap_config cfg = o->cfg;
	int ret;

	if (o->fd >= 0) {
		ret = stallcap_session_adopt(&c->s, o->fd);
	} else {
		if (o->global)
			cfg.flags |= STALLCAP_CFG_GLOBAL;
		ret = stallcap_session_open(&c->s, &cfg, 0);
		if (ret == -EPERM && o->global) {
			warnx_("a system-wide reader needs CAP_SYS_ADMIN");
		} else if (ret == -EINVAL && (cfg.flags & STALLCAP_CFG_DEFER_USER)) {
			warnx_("--defer-user: the loaded stallcap module cannot defer the user-stack copy (no STALLCAP_FEAT_DEFER_USER: its kernel does not export task_work_add); run without it");
			return ret;
		}
	}
	if (ret) {
		warn_open(ret);
		return ret;
	}
	ret = stallcap_ring_map(c->s);
	if (ret)
		warnx_("cannot map the ring: %s", strerror(-ret));
	else
		c->same_pid_ns = stallcap_session_ring(c->s)->ctl->pid_ns_inum ==
				 self_pid_ns();
	return ret;
}

static pid_t spawn(struct collector *c)
{
	int fd = stallcap_session_fd(c->s);
	char num[16];
	pid_t pid = fork();

	if (pid)
		return pid;
	if (!c->o->global) {
		snprintf(num, sizeof(num), "%d", fd);
		fcntl(fd, F_SETFD, 0);
		setenv(STALLCAP_FD_ENV, num, 1);
	}
	execvp(c->o->cmd[0], c->o->cmd);
	fprintf(stderr, "%s: %s: %s\n", prog, c->o->cmd[0], strerror(errno));
	_exit(127);
}

/*
 * The host as a report needs it: the boot (kernel addresses), the clocks,
 * the pid namespaces, and what the module could mark there (its features,
 * and whether pressure stall information was on: without it no sample is
 * ever marked a memory stall).
 */
static void send_host_info(struct collector *c)
{
	struct stallcap_info in = { .size = sizeof(in) };
	struct sc_host_info hi;
	struct utsname u;
	size_t len;
	void *img;

	memset(&hi, 0, sizeof(hi));
	if (!uname(&u))
		snprintf(hi.release, sizeof(hi.release), "%s", u.release);
	read_boot_id(hi.boot_id, sizeof(hi.boot_id));
	hi.realtime_offset_ns = realtime_offset_ns();
	hi.pid_ns_inum = stallcap_session_ring(c->s)->ctl->pid_ns_inum;
	hi.reader_pid_ns_inum = self_pid_ns();
	if (!stallcap_session_get_info(c->s, &in)) {
		hi.module_features = in.features;
		hi.host_flags = SCF_HOST_KNOWN | (psi_on() ? SCF_HOST_PSI : 0);
	}
	if (c->sk->info)
		c->sk->info(c->sk, &hi);
	if (!vdso_image(&img, &len)) {
		if (c->sk->vdso)
			c->sk->vdso(c->sk, img, len);
		free(img);
	}
}

/* --deadline: start the command unmodified, or take the -p processes. */
static int attach_all(struct collector *c, pid_t *child)
{
	const struct collect_opts *o = c->o;
	int fd = stallcap_session_fd(c->s), ret;
	size_t i;

	if (o->cmd) {
		*child = spawn_unmodified(o, fd);
		if (*child >= 0)
			return 0;
		ret = *child;
		*child = 0;
		return ret;
	}
	for (i = 0; i < o->npids; i++) {
		ret = attach_process(o, fd, o->pids[i]);
		if (ret)
			return ret;
		hint_program(o, o->pids[i]);
		if (o->children)
			attach_children(o, fd, o->pids[i]);
	}
	return 0;
}

/*
 * Does a process followed by --deadline (not --no-inherit) still run: are
 * any of the module's watches of this session left?
 */
static bool followed_alive(struct collector *c)
{
	struct stallcap_stats st;

	if (!c->o->deadline_ns || c->o->no_inherit)
		return false;
	return !stallcap_session_get_stats(c->s, &st, 0) && st.attached;
}

/*
 * How long the loop may sleep now: POLL_MS while something is looked for
 * by time (a process without a pidfd, the followed processes' end, a
 * sink's timed work), else until a record or an exit comes, IDLE_POLL_MS
 * at most (the prune, the lost counters); never past the duration's end or
 * the grace's.
 */
static int sleep_ms(const struct collector *c, const struct waitset *ws,
		    bool done, __u64 now, __u64 start, __u64 grace)
{
	__u64 ms = IDLE_POLL_MS, end = 0;

	if (ws->polled || done || !c->sk->timed || c->sk->timed(c->sk))
		ms = POLL_MS;
	if (c->o->duration > 0)
		end = start + (__u64)(c->o->duration * NSEC_PER_SEC);
	if (grace && (!end || grace < end))
		end = grace;
	if (end && (end - now) / NSEC_PER_MSEC < ms)
		ms = end > now ? (end - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC : 0;
	return (int)ms;
}

/* The processes whose exit ends the run: the command, or the -p ones. */
static void watch_exits(const struct collector *c, struct waitset *ws, pid_t child)
{
	size_t i;

	if (child > 0)
		waitset_add_exit(ws, child);
	for (i = 0; i < c->o->npids; i++)
		waitset_add_exit(ws, (pid_t)c->o->pids[i]);
}

static int follow(struct collector *c, pid_t child, int *status)
{
	__u64 start = now_ns(CLOCK_MONOTONIC), t = start, grace = 0;
	struct waitset ws;
	bool done = false;
	int ret = 0, w;

	waitset_init(&ws, stallcap_session_fd(c->s));
	watch_exits(c, &ws, child);
	while (!ret && !c->err && !stop_signal) {
		ret = waitset_wait(&ws, sleep_ms(c, &ws, done, t, start, grace));
		if (ret < 0 || stop_signal)
			break;
		ret = drain(c);
		t = now_ns(CLOCK_MONOTONIC);
		prune(c, t);
		if (c->o->duration > 0 && t - start >= c->o->duration * NSEC_PER_SEC)
			break;
		if (child > 0 && waitpid(child, &w, WNOHANG) == child) {
			*status = w;
			child = 0;
			done = true;
		}
		if (c->o->npids && !done && waitset_exit_seen(&ws) && !any_alive(c->o))
			done = true;
		/* the processes they started (--deadline) may still run */
		if (done && !grace && !followed_alive(c))
			grace = t + GRACE_NS;
		if (grace && t >= grace)
			break;
	}
	waitset_release(&ws);
	if (!ret)
		ret = drain(c);
	if (child > 0) {
		if (stop_signal)
			kill(child, stop_signal);
		while (waitpid(child, status, 0) < 0 && errno == EINTR)
			;
	}
	return ret ? ret : c->err;
}

/**
 * collect_run() - follow the ring until interrupted, the duration passed or
 * the command exited, feeding every record to the sink
 * @cmd_status: wait status of the command, if one ran
 */
int collect_run(const struct collect_opts *o, struct sc_sink *sk, int *cmd_status)
{
	struct collector c = { .o = o, .sk = sk, .ks_err = 1 };
	struct sigaction sa = { .sa_handler = on_signal };
	pid_t child = 0;
	int ret;

	*cmd_status = 0;
	c.ks = ksyms_new();
	c.bc = buildid_cache_new();
	ret = c.ks && c.bc ? open_session(&c) : -ENOMEM;
	if (ret)
		goto out;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	load_ksyms(&c);
	send_host_info(&c);
	if (o->deadline_ns) {
		ret = attach_all(&c, &child);
		if (ret)
			goto out;
	} else if (o->cmd) {
		child = spawn(&c);
		if (child < 0) {
			ret = -errno;
			goto out;
		}
	}
	/* what a script may wait for before it starts what is to be caught */
	if (o->verbose)
		fprintf(stderr, "%s: reading records\n", prog);
	ret = follow(&c, child, cmd_status);
	if (o->verbose)
		fprintf(stderr, "%s: %llu records, %llu lost, %llu suppressed\n", prog,
			(unsigned long long)c.records, (unsigned long long)c.lost,
			(unsigned long long)c.suppressed);
	hint_lost(c.lost);
	if (o->cmd && !o->global && o->fd < 0 && !ret)
		hint_no_watch(c.records);
out:
	if (c.s)
		stallcap_session_close(c.s);	/* an adopted fd too */
	while (c.all_pids)
		pid_free(&c, &c.all_pids);
	while (c.ksyms_sent) {
		struct ksym_sent *k = c.ksyms_sent;

		c.ksyms_sent = k->all_next;
		free(k);
	}
	htab_free(&c.pids);
	htab_free(&c.ksym_done);
	ksyms_free(c.ks);
	free(c.modules);
	buildid_cache_free(c.bc);
	return ret;
}

static int parse_u32(const char *arg, __u32 *v, unsigned long long mult)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(arg, &end, 0);
	if (errno || *end || x * mult > 0xffffffffULL)
		return -EINVAL;
	*v = (__u32)(x * mult);
	return 0;
}

/**
 * collect_check() - settle where records come from
 *
 * Without --fd, --global or a command, root reads system-wide.
 */
int collect_check(struct collect_opts *o)
{
	if ((o->npids || o->cputime || o->no_inherit || o->park) &&
	    !o->deadline_ns) {
		warnx_("-p, --cputime, --no-inherit and --park go with --deadline DUR");
		return -EINVAL;
	}
	if (o->children && !o->npids) {
		warnx_("--children goes with -p PID");
		return -EINVAL;
	}
	if (o->deadline_ns) {
		if (o->fd >= 0 || o->global || (o->npids && o->cmd) ||
		    (!o->npids && !o->cmd)) {
			warnx_("--deadline watches a command (-- CMD) or processes (-p PID), with no --fd or --global");
			return -EINVAL;
		}
		return 0;
	}
	if (o->fd >= 0 && (o->global || o->cmd)) {
		warnx_("--fd takes the application's session: no --global, no command");
		return -EINVAL;
	}
	if (o->fd < 0 && !o->global && !o->cmd) {
		if (geteuid()) {
			warnx_("give --fd N, a command to run, or --global (as root)");
			return -EINVAL;
		}
		o->global = true;
	}
	return 0;
}

/* Options shared by record and a live report; see collect_long_options. */
int collect_parse_opt(struct collect_opts *o, int opt, const char *arg)
{
	char *end;

	switch (opt) {
	case 'F':
		o->fd = (int)strtol(arg, &end, 10);
		return *end || o->fd < 0 ? -EINVAL : 0;
	case 'g':
		o->global = true;
		return 0;
	case 'd': {
		__u64 ns;

		if (parse_duration(arg, &ns))
			return -EINVAL;
		o->duration = ns / 1e9;
		return 0;
	}
	case 'T':
		return parse_duration(arg, &o->deadline_ns) ||
		       !o->deadline_ns ? -EINVAL : 0;
	case 'C':
		o->cputime = true;
		return 0;
	case COLLECT_OPT_NO_INHERIT:
		o->no_inherit = true;
		return 0;
	case COLLECT_OPT_PARK:
		o->park = true;
		return 0;
	case COLLECT_OPT_CHILDREN:
		o->children = true;
		return 0;
	case 'p':
		return parse_pids(o, arg);
	case 'R':
		return parse_u32(arg, &o->cfg.ring_bytes, 1024);
	case 'S':
		return parse_u32(arg, &o->cfg.user_stack_bytes, 1);
	case 'N':
		return parse_u32(arg, &o->cfg.max_samples, 1);
	case 'L':
		return parse_u32(arg, &o->cfg.rate_limit, 1);
	case 'D':
		o->cfg.flags |= STALLCAP_CFG_DEFER_USER;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	default:
		return -ENOENT;
	}
}
