// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): watching unmodified programs (--deadline).
 *
 * `stallcap record --deadline 20ms -- CMD` starts CMD and asks the module to
 * watch every thread of it at the boundaries of its event-loop waits
 * (STALLCAP_IOC_ATTACH), and, unless --no-inherit, the processes it starts
 * and the programs they execute.  `-p PID[,PID...]` attaches to running
 * processes, and with --children to the processes they started before.
 * Nothing is injected into the program: closing the session ends the watches.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

/**
 * parse_duration_max() - "20ms", "500us", "1.5s", "100ns"; a bare number is
 * seconds
 * @arg: the text
 * @ns: the result
 * @max_ns: the largest accepted
 *
 * Return: 0, or -EINVAL.
 */
int parse_duration_max(const char *arg, __u64 *ns, double max_ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "", 1e9 },
	};
	unsigned int i;
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || v < 0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].unit)) {
			if (v * units[i].mult > max_ns)
				return -EINVAL;
			*ns = (__u64)(v * units[i].mult + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

/** parse_duration() - a deadline: parse_duration_max(), at most an hour */
int parse_duration(const char *arg, __u64 *ns)
{
	return parse_duration_max(arg, ns, 3600e9);
}

/** parse_pids() - "PID[,PID...]" appended to o->pids. */
int parse_pids(struct collect_opts *o, const char *arg)
{
	const char *p = arg;
	char *end;
	long v;

	while (*p) {
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > 0x7fffffff ||
		    (*end && *end != ','))
			return -EINVAL;
		if (o->npids == ARRAY_SIZE(o->pids)) {
			warnx_("at most %zu processes", ARRAY_SIZE(o->pids));
			return -EINVAL;
		}
		o->pids[o->npids++] = (__u32)v;
		p = *end ? end + 1 : end;
	}
	return o->npids ? 0 : -EINVAL;
}

static const char *attach_error(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "not permitted: as for perf -p and ptrace, the process must run as your user and not be set-user-ID, or you need CAP_SYS_PTRACE";
	case ESRCH:
		return "no such process";
	case EEXIST:
		return "already attached";
	case ERANGE:
		return "deadline out of range (see stallcap stats for the module's minimum)";
	case ENOSPC:
		return "too many watches for this user (max_watches_per_user)";
	case ENOTTY:
	case EOPNOTSUPP:
		return "the loaded stallcap module cannot attach to processes";
	default:
		return strerror(err);
	}
}

/* STALLCAP_IOC_ATTACH of process @pid with the options @o: 0 or -errno. */
static int attach_ioctl(const struct collect_opts *o, int fd, __u32 pid)
{
	struct stallcap_attach a = {
		.size = sizeof(a),
		.flags = (o->cputime ? STALLCAP_ATTACH_CPUTIME : 0) |
			 (o->no_inherit ? 0 : STALLCAP_ATTACH_INHERIT) |
			 (o->park ? STALLCAP_ATTACH_PARK : 0) |
			 (o->recv ? STALLCAP_ATTACH_RECV : 0),
		.pid = pid,
		.timeout_ns = o->deadline_ns,
	};

	return ioctl(fd, STALLCAP_IOC_ATTACH, &a) ? -errno : 0;
}

/**
 * attach_process() - watch process @pid's event loops in session fd @fd
 * @o: the options (deadline, --cputime, --no-inherit, --park, --recv)
 *
 * Return: 0, or -errno after printing why.
 */
int attach_process(const struct collect_opts *o, int fd, __u32 pid)
{
	errno = -attach_ioctl(o, fd, pid);
	if (!errno)
		return 0;
	if (errno == EINVAL && (o->park || o->recv)) {
		warnx_("cannot attach to process %u: the loaded stallcap module has no %s",
		       pid, !o->recv ? "--park (STALLCAP_ATTACH_PARK)" :
		       !o->park ? "--recv (STALLCAP_ATTACH_RECV)" :
		       "--park or no --recv (STALLCAP_ATTACH_PARK, STALLCAP_ATTACH_RECV)");
		return -EINVAL;
	}
	warnx_("cannot attach to process %u: %s", pid, attach_error(errno));
	return -errno;
}

struct proc_link {
	__u32 pid, ppid;
};

/*
 * The state letter and parent of process @pid (a name in /proc), from
 * "pid (comm) S ppid ...": the fields after the last ')'.
 * Return: 0; -ENOENT when it is gone; -EINVAL when the line is not that.
 */
static int proc_stat_of(const char *pid, char *state, unsigned int *ppid)
{
	char path[300], line[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return p && sscanf(p + 1, " %c %u", state, ppid) == 2 ? 0 : -EINVAL;
}

/* Every process's parent, from /proc/PID/stat; *n entries, or NULL. */
static struct proc_link *read_process_tree(size_t *n)
{
	struct proc_link *links = NULL, *more;
	size_t cap = 0;
	struct dirent *d;
	unsigned int ppid;
	char state;
	DIR *dir;

	*n = 0;
	dir = opendir("/proc");
	if (!dir)
		return NULL;
	while ((d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    proc_stat_of(d->d_name, &state, &ppid))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			more = realloc(links, cap * sizeof(*links));
			if (!more)
				break;
			links = more;
		}
		links[*n].pid = (__u32)strtoul(d->d_name, NULL, 10);
		links[(*n)++].ppid = ppid;
	}
	closedir(dir);
	return links;
}

/* One pass over the process tree: attach to @pid's descendants not yet attached. */
static size_t attach_descendants_once(const struct collect_opts *o, int fd,
				      __u32 pid, size_t *failed)
{
	size_t n, i, head = 0, tail = 0, attached = 0;
	struct proc_link *links = read_process_tree(&n);
	__u32 *queue;
	int ret;

	queue = calloc(n + 1, sizeof(*queue));
	if (!links || !queue) {
		free(links);
		free(queue);
		return 0;
	}
	queue[tail++] = pid;
	/* breadth first: a process is queued once, by its only parent */
	while (head < tail) {
		__u32 parent = queue[head++];

		for (i = 0; i < n && tail <= n; i++) {
			if (links[i].ppid != parent)
				continue;
			queue[tail++] = links[i].pid;
			ret = attach_ioctl(o, fd, links[i].pid);
			if (!ret) {
				attached++;
				hint_program(o, links[i].pid);
			} else if (ret != -EEXIST && ret != -ESRCH) {
				/* already followed, or gone: fine; else say why */
				warnx_("cannot attach to process %u (a child of %u): %s",
				       links[i].pid, parent, attach_error(-ret));
				(*failed)++;
			}
		}
	}
	free(queue);
	free(links);
	return attached;
}

/**
 * attach_children() - --children: attach to the processes @pid started
 *	before the attach, and theirs
 * @o: the options
 * @fd: the session
 * @pid: a process attached already (its later children are followed by the
 *	module unless --no-inherit)
 *
 * A child forked during the scan is followed (EEXIST) or found by the next
 * pass; passes repeat until one attaches nothing new.  A descendant that
 * cannot be attached (another user's) is said, and the others watched.
 *
 * Return: the number of processes attached.
 */
size_t attach_children(const struct collect_opts *o, int fd, __u32 pid)
{
	size_t total = 0, got, failed = 0, pass;

	for (pass = 0; pass < 8; pass++) {
		got = attach_descendants_once(o, fd, pid, &failed);
		total += got;
		if (!got)
			break;
	}
	if (o->verbose || failed)
		warnx_("process %u: %zu child processes attached%s", pid, total,
		       failed ? ", some could not be (above)" : "");
	return total;
}

enum program_kind { PROGRAM_OTHER, PROGRAM_GO, PROGRAM_32BIT };

/* A Go program (its build information), a 32-bit one, or another? */
static enum program_kind elf_program_kind(int fd)
{
	enum program_kind kind = PROGRAM_OTHER;
	bool go = false;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return PROGRAM_OTHER;
	if (gelf_getclass(elf) == ELFCLASS32) {
		kind = PROGRAM_32BIT;
		goto out;
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while (!go && (scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			break;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		go = name && (!strcmp(name, ".go.buildinfo") ||
			      !strcmp(name, ".note.go.buildid"));
	}
	if (go)
		kind = PROGRAM_GO;
out:
	elf_end(elf);
	return kind;
}

/**
 * hint_program() - say what an attach to process @pid cannot do as asked
 * @o: the options
 * @pid: a process just attached (running its program)
 *
 * A Go program's runtime parks idle threads on futexes while one thread
 * polls: without --park they are reported as stalls.  A 32-bit program's
 * system calls take the compat entry points, which are not probed: none of
 * its threads ever goes busy, so none is ever reported.
 */
void hint_program(const struct collect_opts *o, __u32 pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	switch (elf_program_kind(fd)) {
	case PROGRAM_GO:
		if (!o->park)
			warnx_("process %u is a Go program: its runtime parks idle threads on futexes, which count as busy without --park (they would be reported as stalls)",
			       pid);
		break;
	case PROGRAM_32BIT:
		warnx_("process %u runs a 32-bit program: its wait calls are not seen, so none of its threads is ever reported (64-bit programs only)",
		       pid);
		break;
	default:
		break;
	}
	close(fd);
}

/* Child of spawn_unmodified(): wait for the go byte, then exec CMD. */
static void __attribute__((noreturn)) exec_when_told(char **cmd, int go, int report)
{
	ssize_t n;
	char c;
	int err;

	do
		n = read(go, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1) {
		execvp(cmd[0], cmd);
		err = errno;
		if (write(report, &err, sizeof(err)) < 0)
			_exit(127);
	}
	_exit(127);
}

/* Has the child exec'd (the close-on-exec pipe reached EOF)?  0 or -errno. */
static int wait_exec(int report, const char *name)
{
	ssize_t n;
	int err = 0;

	do
		n = read(report, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		warnx_("%s: %s", name, strerror(err));
		return -err;
	}
	return 0;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/**
 * spawn_unmodified() - start CMD watched by session @fd, return once it runs
 * @o: the options (o->cmd, the deadline, --no-inherit)
 * @fd: the session
 *
 * The child gets no session: it is watched by ATTACH.  Following (the
 * default) attaches to the child before it executes CMD, so that the module
 * follows the exec itself and whatever CMD starts from its first instruction
 * (`sh -c 'exec server'`, a server that daemonizes at once); with
 * --no-inherit the attach comes once CMD runs (the module's watches end at
 * exec, and a fork before it is not watched).
 *
 * Return: the child's pid, or -errno (printed: the exec or attach failed).
 */
pid_t spawn_unmodified(const struct collect_opts *o, int fd)
{
	int go[2], report[2], ret = 0;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(report, O_CLOEXEC)) {
		ret = -errno;
		goto close_go;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto close_report;
	}
	if (!pid) {
		close(go[1]);
		close(report[0]);
		exec_when_told(o->cmd, go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	if (!o->no_inherit)
		ret = attach_process(o, fd, (__u32)pid);
	if (!ret && write(go[1], "g", 1) != 1)
		ret = -errno;
	close(go[1]);
	if (!ret)
		ret = wait_exec(report[0], o->cmd[0]);
	if (!ret && o->no_inherit)
		ret = attach_process(o, fd, (__u32)pid);
	close(report[0]);
	if (ret) {
		reap(pid);
		return ret;
	}
	hint_program(o, (__u32)pid);
	return pid;

close_report:
	close(report[0]);
	close(report[1]);
close_go:
	close(go[0]);
	close(go[1]);
	return ret;
}

/** any_alive() - does one of the -p processes still run? */
bool any_alive(const struct collect_opts *o)
{
	unsigned int ppid;
	char name[16], state;
	size_t i;
	int ret;

	for (i = 0; i < o->npids; i++) {
		snprintf(name, sizeof(name), "%u", o->pids[i]);
		ret = proc_stat_of(name, &state, &ppid);
		if (ret == -ENOENT)
			continue;
		/* an unreadable line counts as running */
		if (ret || (state != 'Z' && state != 'X'))
			return true;
	}
	return false;
}
