// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach permission: as perf -p, the reader must be allowed to
 * ptrace-attach the target (PTRACE_MODE_ATTACH_REALCREDS).  ATTACH's target
 * is found here too: the process its pid names, and that process's mm,
 * taken under the same check.
 *
 * ptrace_may_access() is not exported to modules.  Its address is found
 * once through a kprobe registered on it and removed at once, and it is
 * called through that address, so that the kernel's own policy applies
 * (credentials, dumpability, Yama and the other LSMs).  That indirect call
 * is not made where the kernel checks indirect branches: with kernel IBT
 * enforced, the probe's address is past the function's ENDBR (or the ENDBR
 * was sealed at boot, the function's address being never taken) and the
 * call would end in a control-protection BUG(); a clang CFI kernel checks
 * the callee's type hash the same way.  There, and when the parameter
 * own_ptrace_rules is set, the module applies the kernel's ptrace rules
 * itself (__ptrace_may_access() without its LSM hook): the caller's real
 * uid and gid equal to all of the target's, or CAP_SYS_PTRACE in the
 * target's user namespace; and a target that is not dumpable needs
 * CAP_SYS_PTRACE in its mm's user namespace (where the module cannot read
 * dumpability, always CAP_SYS_PTRACE: see owner_may_trace()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/ptrace.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <asm/cpufeature.h>

#include "stallcap.h"
#include "attach.h"

typedef bool (*ptrace_may_access_t)(struct task_struct *task, unsigned int mode);
static ptrace_may_access_t may_access;
static bool perm_ready;		/* stallcap_attach_perm_init() ran */
static bool own_ptrace_rules;

/*
 * own_ptrace_rules=N is refused (EINVAL) once the module found that it
 * cannot call the kernel's function (kernel IBT, clang CFI, no such
 * symbol): the parameter reads what applies.  At load anything goes.
 */
static int own_rules_param_set(const char *val, const struct kernel_param *kp)
{
	bool on = true;		/* a bare "own_ptrace_rules" at load */
	int ret = val ? kstrtobool(val, &on) : 0;

	if (ret)
		return ret;
	if (!on && READ_ONCE(perm_ready) && !may_access)
		return -EINVAL;
	WRITE_ONCE(own_ptrace_rules, on);
	return 0;
}

static const struct kernel_param_ops own_rules_param_ops = {
	.set = own_rules_param_set,
	.get = param_get_bool,
};
module_param_cb(own_ptrace_rules, &own_rules_param_ops, &own_ptrace_rules,
		0644);
MODULE_PARM_DESC(own_ptrace_rules,
		 "Decide who may attach with the module's copy of the kernel's ptrace credential rules, without the LSMs (default off; set at load, and not to be cleared, where indirect branches are checked: kernel IBT, clang CFI)");

static bool indirect_calls_checked(void)
{
	if (IS_ENABLED(CONFIG_CFI_CLANG))
		return true;
#ifdef X86_FEATURE_IBT
	if (cpu_feature_enabled(X86_FEATURE_IBT))
		return true;
#endif
	return false;
}

/* real ids @uid, @gid equal to every id of @tcred (RCU held) */
static bool same_ids(kuid_t uid, kgid_t gid, const struct cred *tcred)
{
	return uid_eq(uid, tcred->euid) && uid_eq(uid, tcred->suid) &&
	       uid_eq(uid, tcred->uid) && gid_eq(gid, tcred->egid) &&
	       gid_eq(gid, tcred->sgid) && gid_eq(gid, tcred->gid);
}

/*
 * Is @task's process dumpable by its owner (task_lock held)?  Since Linux
 * 7.x dumpability is kept in the task's exec state, opaque to modules and
 * read by a function that is not exported: there only CAP_SYS_PTRACE in
 * the initial user namespace permits (a process that made itself not
 * dumpable, as ssh-agent does, must never be read by its owner).
 */
static bool owner_may_trace(struct task_struct *task)
{
#ifdef STALLCAP_HAVE_EXEC_STATE_DUMPABLE
	return ns_capable(&init_user_ns, CAP_SYS_PTRACE);
#else
	struct mm_struct *mm = task->mm;

	if (!mm)
		return ns_capable(&init_user_ns, CAP_SYS_PTRACE);
	return get_dumpable(mm) == SUID_DUMP_USER ||
	       ns_capable(mm->user_ns, CAP_SYS_PTRACE);
#endif
}

/* __ptrace_may_access(PTRACE_MODE_ATTACH_REALCREDS), LSMs aside */
static int own_rules_permit(struct task_struct *task)
{
	const struct cred *tcred;
	bool ok;

	if (same_thread_group(task, current))
		return 0;
	rcu_read_lock();
	tcred = __task_cred(task);
	ok = same_ids(current_uid(), current_gid(), tcred) ||
	     ns_capable(tcred->user_ns, CAP_SYS_PTRACE);
	rcu_read_unlock();
	if (!ok)
		return -EPERM;
	/* dumpability after the credentials: pairs with commit_creds() */
	smp_rmb();
	task_lock(task);
	ok = owner_may_trace(task);
	task_unlock(task);
	return ok ? 0 : -EPERM;
}

/**
 * stallcap_attach_permitted() - may current attach to @task's process?
 * @task: a thread of the process, with its mm (reference held)
 *
 * Context: process.  Return: 0, or -EPERM.
 */
int stallcap_attach_permitted(struct task_struct *task)
{
	if (READ_ONCE(own_ptrace_rules) || !may_access)
		return own_rules_permit(task);
	/* it takes task_lock() itself */
	return may_access(task, PTRACE_MODE_ATTACH_REALCREDS) ? 0 : -EPERM;
}

/**
 * stallcap_attacher_current() - record the current task as an attach's
 * maker (the caller of ATTACH, whose permission was just checked)
 * @who: filled in
 *
 * Context: process.
 */
void stallcap_attacher_current(struct stallcap_attacher *who)
{
	who->uid = current_uid();
	who->gid = current_gid();
	who->trace_any = ns_capable_noaudit(&init_user_ns, CAP_SYS_PTRACE);
}

/**
 * stallcap_attacher_may_follow() - may the maker of an attach watch a
 * process (or program) its process created, with credentials @tcred?
 * @who: the attach's maker
 * @tcred: the new process's credentials (after its exec's commit_creds())
 *
 * A process the attached process creates may have other credentials than
 * the one the maker was allowed to attach: a set-user-ID helper it ran
 * (su, doas, pkexec) may start a root shell whose own exec raises nothing.
 * Such a process is followed only as ptrace would allow the maker, by the
 * credential rules without LSMs, and more strictly: the maker's real ids
 * equal to all of the process's, or CAP_SYS_PTRACE in the initial user
 * namespace (a maker privileged in a user namespace only is not trusted
 * beyond its own ids).
 *
 * Context: any but NMI (RCU held for another task's credentials).
 */
bool stallcap_attacher_may_follow(const struct stallcap_attacher *who,
				  const struct cred *tcred)
{
	return who->trace_any || same_ids(who->uid, who->gid, tcred);
}

/*
 * A thread of @leader's process that has its mm (the leader, unless it has
 * exited alone), with a reference; NULL if none.
 */
static struct task_struct *attach_process_thread(struct task_struct *leader)
{
	struct task_struct *t, *found = NULL;

	rcu_read_lock();
	for_each_thread(leader, t) {
		if (READ_ONCE(t->mm)) {
			found = get_task_struct(t);
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/**
 * stallcap_attach_checked_mm() - the mm of the process ATTACH names, if its
 * caller may attach to it
 * @leader: the process (its thread group leader, referenced)
 * @ret: 0, or why not: the permission's errno, -ESRCH for a process that
 *	exits or a kernel thread, or -EINTR (killed while waiting)
 *
 * As mm_access(): the check and the mm are taken under exec_update_lock,
 * so that an exec between them (of a set-user-ID program) cannot hand over
 * an mm the check did not see.  Both are of one thread that has the mm: a
 * leader that exited alone has none, and the kernel's ptrace rules skip
 * the dumpable test of a task without one (a daemon that dropped its
 * privileges is not dumpable).
 *
 * Context: process context, may sleep.
 * Return: the mm with a reference, or NULL.
 */
struct mm_struct *stallcap_attach_checked_mm(struct task_struct *leader,
					     int *ret)
{
	struct task_struct *thread;
	struct mm_struct *mm = NULL;

	*ret = down_read_killable(&leader->signal->exec_update_lock);
	if (*ret)
		return NULL;
	thread = attach_process_thread(leader);
	*ret = thread ? stallcap_attach_permitted(thread) : -ESRCH;
	if (!*ret) {
		mm = get_task_mm(thread);
		if (!mm)
			*ret = -ESRCH;	/* exiting, or a kernel thread */
	}
	up_read(&leader->signal->exec_update_lock);
	if (thread)
		put_task_struct(thread);
	return mm;
}

/**
 * stallcap_attach_find_process() - the process @pid names
 * @pid: a process id in the caller's pid namespace
 *
 * Return: its thread group leader with a reference, or NULL.
 */
struct task_struct *stallcap_attach_find_process(pid_t pid)
{
	struct task_struct *task;

	if (pid <= 0)
		return NULL;
	rcu_read_lock();
	task = pid_task(find_vpid(pid), PIDTYPE_TGID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	return task;
}

/** stallcap_attach_perm_init() - find ptrace_may_access() where it may be called */
void stallcap_attach_perm_init(void)
{
	struct kprobe kp = { .symbol_name = "ptrace_may_access" };

	if (indirect_calls_checked()) {
		pr_info("indirect branches are checked: attach permission by the ptrace rules without the LSMs\n");
	} else if (register_kprobe(&kp)) {
		pr_info("ptrace_may_access not found: attach permission by the ptrace rules without the LSMs\n");
	} else {
		may_access = (ptrace_may_access_t)kp.addr;
		unregister_kprobe(&kp);
	}
	if (!may_access)
		WRITE_ONCE(own_ptrace_rules, true);
	WRITE_ONCE(perm_ready, true);
}
