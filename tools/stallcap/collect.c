// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): following a session's ring live.
 *
 * The ring comes from the application (--fd), from a system-wide reader
 * (--global, needs CAP_SYS_ADMIN), or from a session this tool opens for a
 * command it runs (the command finds it through STALLCAP_FD).  Before the
 * first record of a process reaches the sink, the process's maps and the
 * build-ids of its files do, and so do the kernel symbols a record names:
 * the output stays readable after the process exits or the module unloads
 * (collect_meta.c).  The options are parsed in collect_opts.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "record_file.h"

#define POLL_MS		100
#define IDLE_POLL_MS	1000	/* nothing due by time: records and exits wake it */
#define GLOBAL_GRACE_NS	(300 * NSEC_PER_MSEC)	/* --global: records mirrored after exit */

static volatile sig_atomic_t stop_signal;
/* the command, once the run has ended: a signal then is passed on to it */
static volatile sig_atomic_t signal_child;

/*
 * The first SIGINT or SIGTERM ends the run (the records read so far are
 * written, the command ended); one while the command ends is passed on to
 * it; another before then acts at once (a write blocked on a stalled pipe
 * is restarted, SA_RESTART, and only this ends it).
 */
static void on_signal(int sig)
{
	if (signal_child > 0) {
		kill(signal_child, sig);
	} else if (stop_signal) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop_signal = sig;
}

/** collect_stop() - collect_run() returns after this round (a sink that is done). */
void collect_stop(void)
{
	stop_signal = SIGTERM;
}

/* @rec: the ring reader's private, checked copy (the ring is writable by the watched program) */
/*
 * A watch of the module: a process that --deadline starts watching (after
 * the attach, a fork or an exec) may run another program under a pid the
 * tool knows: its maps are read again at its next sample.  One that could
 * not be watched is said on stderr at once.  Its thread counts as watched
 * from its first busy period (STALLCAP_WATCH_BUSY; from its start with a
 * module that does not tell it): one that never waits in a call the
 * attach counts is listed with the unwatched threads.
 */
static void see_watch(struct collector *c, const struct stallcap_rec_header *rec)
{
	struct stallcap_watch_event ev;
	struct pid_entry *e;

	if (stallcap_watch_event_parse(rec, rec->size, &ev))
		return;
	if (c->o->deadline_ns &&
	    (ev.event == STALLCAP_WATCH_STARTED || ev.event == STALLCAP_WATCH_BUSY))
		unwatched_saw_watch(c, c->same_pid_ns && ev.ns_pid ? ev.ns_pid : ev.pid,
				    c->same_pid_ns && ev.ns_tid ? ev.ns_tid : ev.tid,
				    ev.event == STALLCAP_WATCH_BUSY || !c->watch_busy_told);
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

/*
 * The kernel functions of a blocking socket receive, pipe or terminal read,
 * one of which is on the kernel stack of a thread inside one (the system
 * calls' entry points where their work is inlined)
 */
static const char *const receive_fns[] = {
	"pipe_read", "anon_pipe_read", "n_tty_read", "sock_read_iter", "__sys_recvfrom",
	"___sys_recvmsg", "do_recvmmsg", "__x64_sys_recvfrom", "__x64_sys_recvmsg",
	"__x64_sys_recvmmsg",
};

/* Is the kernel stack of sample @v inside a receive (receive_fns)? */
static bool in_receive(struct collector *c, const struct stallcap_sample_view *v)
{
	const struct ksym *k = NULL;
	unsigned int i, j;
	size_t len;

	for (i = 0; i < v->nr_kernel && !c->ks_err; i++) {
		k = ksyms_find(c->ks, v->kernel_ips[i] - ksym_frame_is_return(i, k));
		if (!k)
			continue;
		len = strcspn(k->name, ".");	/* a compiler's .isra.0, .cold */
		for (j = 0; j < ARRAY_SIZE(receive_fns); j++)
			if (strlen(receive_fns[j]) == len && !strncmp(k->name, receive_fns[j], len))
				return true;
	}
	return false;
}

/*
 * A sample inside a system call on a descriptor: what the descriptor is
 * open on, told the sink before the record (the thread is likely still
 * inside the call: the link is read as the sample arrives)
 */
static void see_syscall(struct collector *c, const struct stallcap_rec_header *rec,
			const struct stallcap_sample_view *v)
{
	char path[80];
	struct sc_fdname f;
	ssize_t n;
	int fd;

	c->fd_link[0] = 0;
	c->has_syscall = rec->type == STALLCAP_REC_SAMPLE &&
			 stallcap_sample_syscall(rec, rec->size, &c->sys) == 1;
	fd = c->has_syscall ? sc_syscall_fd(&c->sys) : -1;
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/fd/%d",
		 c->same_pid_ns && v->s.ns_pid ? v->s.ns_pid : v->s.pid,
		 c->same_pid_ns && v->s.ns_tid ? v->s.ns_tid : v->s.tid, fd);
	n = readlink(path, c->fd_link, sizeof(c->fd_link) - 1);
	c->fd_link[n > 0 ? n : 0] = 0;
	if (n <= 0 || !c->sk->fdname || c->err)
		return;
	f = (struct sc_fdname){ .pid = v->s.pid, .tid = v->s.tid, .stall_id = v->s.stall_id,
				.sample_index = v->s.sample_index, .fd = fd, .name = c->fd_link };
	c->err = c->sk->fdname(c->sk, &f);
}

/*
 * Is the sample's system call a receive: recv*(), or a read() or readv() of
 * a socket, a pipe or a terminal (told without kernel frames, which a
 * reader may not be shown)?
 */
static bool syscall_receives(const struct collector *c)
{
	__u32 nr = c->sys.nr;

	if (!c->has_syscall)
		return false;
	if (nr == SYS_recvfrom || nr == SYS_recvmsg || nr == SYS_recvmmsg)
		return true;
	return (nr == SYS_read || nr == SYS_readv) &&
	       (!strncmp(c->fd_link, "socket:[", 8) || !strncmp(c->fd_link, "pipe:[", 6) ||
		!strncmp(c->fd_link, "/dev/pts/", 9) || !strncmp(c->fd_link, "/dev/tty", 8));
}

/*
 * A stall of an attached thread that began waiting on a futex (hint_park())
 * or in a receive (hint_recv())
 */
static void see_first_sample(struct collector *c, const struct stallcap_rec_header *rec,
			     const struct stallcap_sample_view *v)
{
	if (rec->type != STALLCAP_REC_SAMPLE || v->s.origin != STALLCAP_ORIGIN_ATTACH ||
	    v->s.sample_index)
		return;
	c->attached_stalls++;
	c->futex_stalls += v->has_wait && v->wait.kind == STALLCAP_WAIT_FUTEX &&
			   !(v->wait.flags & STALLCAP_WAIT_F_JOIN);
	c->receive_stalls += !c->o->recv && (syscall_receives(c) || in_receive(c, v));
}

static int on_record(const struct stallcap_rec_header *rec, void *arg)
{
	struct collector *c = arg;
	struct stallcap_sample_view v;

	if (rec->type == STALLCAP_REC_SAMPLE || rec->type == STALLCAP_REC_USER_STACK) {
		if (!stallcap_sample_parse(rec, rec->size, &v)) {
			see_process(c, &v);
			see_kernel(c, &v);
			see_syscall(c, rec, &v);
			see_first_sample(c, rec, &v);
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
	if (c->sk->flush && !c->err)
		c->err = c->sk->flush(c->sk);	/* its own errno: ENOSPC... */
	if (c->err)
		return c->err;
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
		c->watch_busy_told = in.features & STALLCAP_FEAT_WATCH_BUSY;
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

/*
 * The run ended before the command did (a signal, the duration, an error):
 * the command gets that signal, SIGTERM for the others, as `timeout` would
 * give it, and a signal that comes while it ends is passed on (the
 * handler's; SA_RESTART restarts the wait).
 */
static void end_command(pid_t child, int *status)
{
	signal_child = child;
	kill(child, stop_signal ? stop_signal : SIGTERM);
	while (waitpid(child, status, 0) < 0 && errno == EINTR)
		;
	signal_child = 0;
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
		if (c->o->deadline_ns)
			unwatched_scan(c, t, false);
		if (c->o->duration > 0 && t - start >= c->o->duration * NSEC_PER_SEC)
			break;
		if (child > 0 && waitpid(child, &w, WNOHANG) == child) {
			*status = w;
			child = 0;
			done = true;
		}
		if (c->o->npids && !done && waitset_exit_seen(&ws) && !any_alive(c->o))
			done = true;
		/*
		 * The processes they started (--deadline) may still run.  Once
		 * none does, the ring holds every record of theirs: a thread's
		 * stall end (and its attached watch's end) is written at its
		 * exit, in sched_process_exit, before its process can be
		 * reaped (drained once more below).  A system-wide reader's
		 * copies of other sessions' records are mirrored from an
		 * irq_work: --global waits a little for them.
		 */
		if (done && !grace && !followed_alive(c))
			grace = t + (c->o->global ? GLOBAL_GRACE_NS : 0);
		if (grace && t >= grace)
			break;
	}
	waitset_release(&ws);
	if (ret < 0 && !c->err)	/* a ring refused as damaged, a poll error */
		fprintf(stderr, "%s: reading records stopped: %s\n", prog,
			strerror(-ret));
	else if (!ret)	/* (a write error is the sink's to tell) */
		ret = drain(c);
	if (c->o->deadline_ns)	/* the CPU time of those still running */
		unwatched_scan(c, now_ns(CLOCK_MONOTONIC), true);
	if (child > 0)
		end_command(child, status);
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
	/* restarted: a write to a slow pipe (-o -) is not cut by a signal */
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	pid_t child = 0;
	int ret;

	*cmd_status = 0;
	c.started_ticks = now_ns(CLOCK_BOOTTIME) * (__u64)sysconf(_SC_CLK_TCK) / NSEC_PER_SEC;
	c.ks = ksyms_new();
	c.bc = buildid_cache_new();
	if (c.bc)	/* a report made after the process exits needs them */
		buildid_cache_keep_deleted(c.bc);
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
		c.cmd_pid = child;
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
	if (o->deadline_ns && !o->park)
		hint_park(c.futex_stalls, c.attached_stalls);
	if (o->deadline_ns && !o->recv)
		hint_recv(c.receive_stalls, c.attached_stalls);
	if (o->deadline_ns && !ret)
		unwatched_hint(&c);
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
	unwatched_free(&c);
	ksyms_free(c.ks);
	free(c.modules);
	buildid_cache_free(c.bc);
	return ret;
}
