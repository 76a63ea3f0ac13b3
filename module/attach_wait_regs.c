// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: a thread found inside a wait call without having been
 * seen to enter it (it entered before the probes existed, or before its
 * process was attached), told from its saved user registers; and, from a
 * thread's own task_work, whether its system call has returned or is to be
 * resumed by restart_syscall.  The probes themselves: attach_wait.c and
 * attach_wait_kinds.c.
 */
#include <linux/kallsyms.h>
#include <linux/fdtable.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/task.h>	/* task_lock() */
#include <linux/sched/task_stack.h>	/* task_pt_regs() on 5.15 */
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/unistd.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "why.h"

/*
 * The wait call that restart_syscall resumes in @task, known by the
 * function its restart block holds (static functions: by name, a
 * compiler's suffix allowed), or -1.
 */
static noinline long restarted_wait_call(struct task_struct *task)
{
	static const struct {
		const char *fn;
		long nr;
	} restarts[] = {
		{ "do_restart_poll", __NR_poll },
		{ "hrtimer_nanosleep_restart", __NR_nanosleep },
		{ "futex_wait_restart", __NR_futex },
	};
	char name[KSYM_SYMBOL_LEN];
	unsigned int i;
	size_t len;

	sprint_symbol_no_offset(name,
				(unsigned long)READ_ONCE(task->restart_block.fn));
	for (i = 0; i < ARRAY_SIZE(restarts); i++) {
		len = strlen(restarts[i].fn);
		if (!strncmp(name, restarts[i].fn, len) &&
		    (!name[len] || name[len] == '.'))
			return restarts[i].nr;
	}
	return -1;
}

/*
 * Is @fd of @task a file whose read() or readv() the probes count as a
 * wait (a blocking timerfd, signalfd or eventfd; a socket or a pipe for
 * @waits with SC_WAIT_RECV), as its read function says; with @splice,
 * whose splice() to a pipe they count (/dev/fuse's), as its splice_read
 * says?  The file is looked at under RCU without a reference: its memory
 * stays a file's, and a module's file operations stay, until a grace
 * period passes.  A file closed and its number reused meanwhile answers
 * for a read the thread is no longer inside (it returned: its watch sees
 * the next).
 * Context: process (task_lock: @task->files), RCU read side allowed.
 */
static noinline bool task_fd_read_waits(struct task_struct *task,
					unsigned long fd, unsigned int waits,
					bool splice)
{
	const struct file_operations *fops;
	char name[KSYM_SYMBOL_LEN];
	unsigned long fn = 0;
	struct file *file;

	if (fd > INT_MAX)
		return false;
	task_lock(task);
	rcu_read_lock();
	file = task->files ? files_lookup_fd_raw(task->files, fd) : NULL;
	if (file && !(READ_ONCE(file->f_flags) & O_NONBLOCK)) {
		/* NULL in a file reused and being set up (6.7+: typesafe) */
		fops = READ_ONCE(file->f_op);
		if (fops && splice)
			fn = (unsigned long)fops->splice_read;
		else if (fops)
			fn = (unsigned long)fops->read_iter;
		if (fops && !fn && !splice)	/* timerfd, signalfd before 6.8 */
			fn = (unsigned long)fops->read;
	}
	rcu_read_unlock();
	task_unlock(task);
	if (!fn)
		return false;
	sprint_symbol_no_offset(name, fn);
	*strchrnul(name, ' ') = '\0';	/* a module's: "uio_read [uio]" */
	/* ThinLTO's renaming, "tty_read.llvm.N" (ksym_lto.c) */
	name[stallcap_ksym_base_len(name)] = '\0';
	/* a FIFO's read calls the anonymous pipe's, which is probed (6.15+) */
	if (!strcmp(name, "fifo_pipe_read"))
		strscpy(name, "anon_pipe_read", sizeof(name));
	/* a terminal's calls its line discipline's: n_tty's is probed */
	if (!strcmp(name, "tty_read"))
		strscpy(name, "n_tty_read", sizeof(name));
	return stallcap_wait_probes_count_read(name, waits);
}

/**
 * stallcap_task_in_wait_call() - is @task inside a call that the probes
 * count, as its user registers say
 * @task: a thread of an attached process
 * @waits: the kinds of wait call counted (enum stallcap_wait_kind)
 *
 * A thread that entered the call before the probes existed, or before its
 * process was attached, has no return hook: its saved user registers tell,
 * the system call it entered the kernel with (orig_ax) and, until that call
 * returns, SC_AX_IN_SYSCALL in ax (the entry's; an interrupt saves the
 * user's ax, and a call's return its result).  Inside restart_syscall (a
 * wait stopped and continued before the attach), the call it resumes;
 * inside read() or readv(), the file's read function (a blocking timerfd,
 * signalfd or eventfd, a socket, a pipe: the probes' reads); inside
 * splice(), its input file's splice_read function (/dev/fuse's).  A call whose
 * probe is not registered on this kernel, a 32-bit call (other numbers,
 * the compat entry points, never probed) and an io_uring or vhost worker
 * (it never returns to user space) never count.
 * Context: process; @task may run or exit meanwhile (its registers are
 * copied without faulting, stallcap_task_user_regs()).
 */
bool stallcap_task_in_wait_call(struct task_struct *task, unsigned int waits)
{
	struct pt_regs regs, *args = &regs;
	long nr;

	if ((READ_ONCE(task->flags) & SC_PF_NO_USER_RETURN) ||
	    (READ_ONCE(task_thread_info(task)->status) & TS_COMPAT) ||
	    !stallcap_task_user_regs(task, &regs) || regs.ax != SC_AX_IN_SYSCALL)
		return false;
	nr = regs.orig_ax;
	/* of a timerfd, signalfd, eventfd, socket, pipe: its read function */
	if (nr == __NR_read || nr == __NR_readv)
		return task_fd_read_waits(task, regs.di, waits, false);
	/* of /dev/fuse into a pipe: its splice_read function */
	if (nr == __NR_splice)
		return task_fd_read_waits(task, regs.di, waits, true);
	if (nr == __NR_restart_syscall) {
		nr = restarted_wait_call(task);
		args = NULL;
	}
	return stallcap_wait_probes_count(nr, args, waits);
}

/**
 * stallcap_task_left_wait_call() - has @task, found inside a counted wait
 * call by stallcap_task_in_wait_call(), left it for good?
 * @task: a thread of an attached process
 * @waits: as for stallcap_task_in_wait_call()
 *
 * Not while the call is still there, nor when it returned to be resumed by
 * restart_syscall (a stop: -ERESTART_RESTARTBLOCK in ax, then that call's
 * number until the thread enters it), nor when the registers cannot be
 * read (an exiting thread: its watch ends with it).
 * Context: process, RCU read side allowed (attach_resume.c).
 */
bool stallcap_task_left_wait_call(struct task_struct *task,
				  unsigned int waits)
{
	struct pt_regs regs;

	if (stallcap_task_in_wait_call(task, waits) ||
	    !stallcap_task_user_regs(task, &regs))
		return false;
	/* continued: about to enter restart_syscall (ax its number) */
	return !stallcap_returned_restartable(&regs) &&
	       regs.ax != __NR_restart_syscall;
}

/**
 * stallcap_current_call_restartable() - did the current thread's system
 * call return to be resumed by restart_syscall?
 *
 * A task_work queued before the signal came runs in get_signal() (or at a
 * tracer's syscall-exit stop), before the restart is set up: ax still holds
 * the call's return value.  One queued while the thread was stopped runs
 * after: ax then holds restart_syscall's number, and ip is back on the
 * syscall instruction.
 * Context: the current thread's task_work.
 * Return: true if the call is to be resumed by restart_syscall.
 */
bool stallcap_current_call_restartable(void)
{
	struct pt_regs *regs = task_pt_regs(current);
	u16 insn;

	if (stallcap_returned_restartable(regs))
		return true;
	return regs->ax == __NR_restart_syscall &&
	       !get_user(insn, (const u16 __user *)regs->ip) &&
	       insn == SC_X86_SYSCALL_INSN;
}

/**
 * stallcap_current_call_returned() - is the current thread on its way back
 * to user space (a task_work run there), not inside its system call
 *
 * io_uring_enter runs the thread's task_works inside its wait, each time
 * the thread wakes there: the call has not returned (ax still holds the
 * entry's SC_AX_IN_SYSCALL).
 * Context: the current thread's task_work.
 * Return: true once the call returned.
 */
bool stallcap_current_call_returned(void)
{
	return !(current->flags & SC_PF_NO_USER_RETURN) &&
	       task_pt_regs(current)->ax != SC_AX_IN_SYSCALL;
}
