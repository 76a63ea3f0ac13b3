// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the system call a sample's thread was inside
 * (STALLCAP_SEC_SYSCALL): its name, from the kernel headers' x86-64 table
 * (stallcap/gen/syscalls.h, made from <asm/unistd_64.h> at build time),
 * and for a call whose first argument is a file descriptor, that
 * descriptor and what it was open on (read from /proc/PID/fd by `record`
 * when the sample arrived, kept in the record file: SCF_FDNAME).
 */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "tool.h"
#include "output.h"

static const char *const syscall_names[] = {
#include "gen/syscalls.h"
};

/* calls whose first argument is a file descriptor */
static const int fd_first_calls[] = {
	SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev,
	SYS_preadv, SYS_pwritev, SYS_preadv2, SYS_pwritev2, SYS_fsync, SYS_fdatasync,
	SYS_sync_file_range, SYS_syncfs, SYS_ioctl, SYS_fcntl, SYS_flock, SYS_fstat,
	SYS_fstatfs, SYS_ftruncate, SYS_fallocate, SYS_getdents64, SYS_lseek,
	SYS_fadvise64, SYS_readahead, SYS_close, SYS_sendto, SYS_recvfrom, SYS_sendmsg,
	SYS_recvmsg, SYS_sendmmsg, SYS_recvmmsg, SYS_accept, SYS_accept4, SYS_connect,
	SYS_shutdown, SYS_bind, SYS_listen, SYS_getsockopt, SYS_setsockopt,
	SYS_epoll_wait, SYS_epoll_pwait, SYS_epoll_pwait2, SYS_epoll_ctl, SYS_splice,
	SYS_tee, SYS_sendfile, SYS_copy_file_range, SYS_io_uring_enter,
	SYS_mq_timedreceive, SYS_mq_timedsend, SYS_fgetxattr, SYS_fsetxattr,
};

/**
 * sc_syscall_name() - the name of x86-64 system call @nr, or NULL
 * @nr: STALLCAP_SEC_SYSCALL's nr
 */
const char *sc_syscall_name(__u32 nr)
{
	return nr < ARRAY_SIZE(syscall_names) ? syscall_names[nr] : NULL;
}

/**
 * sc_syscall_label() - the name of system call @nr, or "syscall NR" in @buf
 * @nr: STALLCAP_SEC_SYSCALL's nr
 * @buf: room for a number the table does not name
 * @len: its size (SC_SYSCALL_LABEL_MAX)
 */
const char *sc_syscall_label(__u32 nr, char *buf, size_t len)
{
	const char *name = sc_syscall_name(nr);

	if (name)
		return name;
	snprintf(buf, len, "syscall %u", nr);
	return buf;
}

/** sc_syscall_fd() - the descriptor the call of @sys is on, or -1 */
int sc_syscall_fd(const struct stallcap_sec_syscall *sys)
{
	unsigned int i;

	if (sys->args[0] > 0x7fffffff)	/* an int: fds are small */
		return -1;
	for (i = 0; i < ARRAY_SIZE(fd_first_calls); i++)
		if (sys->nr == (__u32)fd_first_calls[i])
			return (int)sys->args[0];
	return -1;
}

/**
 * sc_syscall_text() - "read, fd 5 (pipe:[1234])", "futex", "syscall 999"
 * @out: where to
 * @m: a sample with a STALLCAP_SEC_SYSCALL section
 *
 * The file's name is untrusted bytes (a path anyone could create): escaped.
 */
void sc_syscall_text(FILE *out, const struct sc_sample *m)
{
	char buf[SC_SYSCALL_LABEL_MAX];
	int fd = sc_syscall_fd(&m->sys);

	fputs(sc_syscall_label(m->sys.nr, buf, sizeof(buf)), out);
	if (fd < 0)
		return;
	fprintf(out, ", fd %d", fd);
	if (m->fd_name) {
		fputs(" (", out);
		text_str(out, m->fd_name);
		fputc(')', out);
	}
}

/** sc_syscall_json() - the "syscall" member (with a leading comma), null if none */
void sc_syscall_json(FILE *out, const struct sc_sample *m)
{
	const char *name;
	unsigned int i;
	int fd;

	if (!m->has_syscall) {
		fprintf(out, ",\"syscall\":null");
		return;
	}
	name = sc_syscall_name(m->sys.nr);
	fd = sc_syscall_fd(&m->sys);
	fprintf(out, ",\"syscall\":{\"nr\":%u,\"name\":", m->sys.nr);
	if (name)
		json_str(out, name);
	else
		fprintf(out, "null");
	fprintf(out, ",\"args\":[");
	for (i = 0; i < ARRAY_SIZE(m->sys.args); i++)
		fprintf(out, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)m->sys.args[i]);
	fprintf(out, "]");
	if (fd >= 0) {
		fprintf(out, ",\"fd\":%d,\"file\":", fd);
		if (m->fd_name)
			json_str(out, m->fd_name);
		else
			fprintf(out, "null");
	}
	fprintf(out, "}");
}
