// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap ioctls: dispatch by type, number and direction (the size bits of
 * the command are ignored), one small handler per command.  Every argument
 * struct carries its size in its first field: read with
 * copy_struct_from_user() semantics (a larger struct with a zero tail is
 * fine, a non-zero tail is E2BIG, below VER0 is EINVAL, above a page E2BIG),
 * output written up to min(size passed, size known) with size set to the
 * module's.  A failing ioctl changes nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

/* ---- extensible structs that carry their size ---- */

/**
 * arg_in() - read an argument struct whose first field is its size
 * @dst: kernel copy, @ksize bytes (zero-filled beyond what the caller has)
 * @ksize: sizeof the struct as the module knows it
 * @ver0: the smallest size accepted
 * @uarg: the user pointer
 * @usize: out: the size the caller passed
 */
static int arg_in(void *dst, size_t ksize, u32 ver0, const void __user *uarg,
		  u32 *usize)
{
	if (get_user(*usize, (const u32 __user *)uarg))
		return -EFAULT;
	if (*usize < ver0)
		return -EINVAL;
	if (*usize > PAGE_SIZE)
		return -E2BIG;
	return copy_struct_from_user(dst, ksize, uarg, *usize);
}

/* Write an output struct: min(usize, ksize) bytes, size = ksize. */
static int arg_out(void __user *uarg, void *src, u32 ksize, u32 usize)
{
	*(u32 *)src = ksize;
	if (copy_to_user(uarg, src, min(usize, ksize)))
		return -EFAULT;
	return 0;
}

/* ---- handlers ---- */

static long ioctl_arm(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_arm arm;
	u32 usize;
	int ret;

	ret = arg_in(&arm, sizeof(arm), STALLCAP_ARM_SIZE_VER0,
		     (void __user *)arg, &usize);
	if (ret)
		return ret;
	return stallcap_watch_arm(sess, &arm);
}

static long ioctl_rearm(struct stallcap_session *sess, unsigned long arg)
{
	return stallcap_watch_rearm(sess, arg);
}

static long ioctl_disarm(struct stallcap_session *sess, unsigned long arg)
{
	return arg ? -EINVAL : stallcap_watch_disarm(sess);
}

static long ioctl_release(struct stallcap_session *sess, unsigned long arg)
{
	return arg ? -EINVAL : stallcap_watch_release(sess);
}

/* Install @c (checked); sess->lock held. */
static int config_install(struct stallcap_session *sess,
			  const struct stallcap_config *c)
{
	struct stallcap_config old = sess->cfg;
	int ret;

	if (sess->ring && (c->ring_bytes != old.ring_bytes ||
			   c->user_stack_bytes != old.user_stack_bytes ||
			   c->slots != old.slots))
		return -EBUSY;
	sess->cfg = *c;
	if (!(c->flags & STALLCAP_CFG_GLOBAL)) {
		stallcap_global_detach(sess);
		return 0;
	}
	/* a global reader needs its ring, of the size just set */
	ret = stallcap_session_ensure_ring(sess, false);
	if (ret) {
		sess->cfg = old;
		return ret;
	}
	stallcap_global_attach(sess);
	return 0;
}

static long ioctl_set_config(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_config c;
	u32 usize;
	int ret;

	ret = arg_in(&c, sizeof(c), STALLCAP_CONFIG_SIZE_VER0,
		     (void __user *)arg, &usize);
	if (ret)
		return ret;
	stallcap_config_defaults(&c);
	ret = stallcap_config_check(sess, &c);
	if (ret)
		return ret;
	mutex_lock(&sess->lock);
	ret = config_install(sess, &c);
	mutex_unlock(&sess->lock);
	return ret;
}

static long ioctl_get_config(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_config c;
	u32 usize;
	int ret;

	ret = arg_in(&c, sizeof(c), STALLCAP_CONFIG_SIZE_VER0,
		     (void __user *)arg, &usize);
	if (ret)
		return ret;
	mutex_lock(&sess->lock);
	c = sess->cfg;
	mutex_unlock(&sess->lock);
	return arg_out((void __user *)arg, &c, sizeof(c), usize);
}

static long ioctl_get_stats(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_stats *st;
	u32 usize, flags;
	int ret;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	ret = arg_in(st, sizeof(*st), STALLCAP_STATS_SIZE_VER0,
		     (void __user *)arg, &usize);
	flags = st->flags;
	/* its inputs: flags and the reserved field (the counters are output) */
	if (!ret && (flags & ~STALLCAP_STATS_GLOBAL || st->__reserved))
		ret = -EINVAL;
	/* other users' activity: for the same openers as a global reader */
	if (!ret && (flags & STALLCAP_STATS_GLOBAL) && !sess->may_stats_global)
		ret = -EPERM;
	if (ret)
		goto out;
	memset(st, 0, sizeof(*st));
	stallcap_counters_read(flags & STALLCAP_STATS_GLOBAL ?
			       &stallcap_global : &sess->stats, st);
	st->flags = flags;
	ret = arg_out((void __user *)arg, st, sizeof(*st), usize);
out:
	kfree(st);
	return ret;
}

static long ioctl_get_info(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_info info;
	u32 usize;
	int ret;

	ret = arg_in(&info, sizeof(info), STALLCAP_INFO_SIZE_VER0,
		     (void __user *)arg, &usize);
	if (ret)
		return ret;
	memset(&info, 0, sizeof(info));
	info.abi_version = STALLCAP_ABI_VERSION;
	info.features = STALLCAP_FEAT_CPUTIME | STALLCAP_FEAT_HEARTBEAT |
			STALLCAP_FEAT_GLOBAL | STALLCAP_FEAT_SHARED_DEADLINE |
			STALLCAP_FEAT_TIMES | STALLCAP_FEAT_WHY |
			STALLCAP_FEAT_SIGNAL_STACK | STALLCAP_FEAT_SEC_SYSCALL;
	if (SC_HAVE_TASK_WORK)		/* compat.h */
		info.features |= STALLCAP_FEAT_DEFER_USER |
				 STALLCAP_FEAT_USER_STACK_MORE;
	/* the attach's wait boundaries are kretprobes */
	if (IS_ENABLED(CONFIG_KRETPROBES))
		info.features |= STALLCAP_FEAT_ATTACH |
				 STALLCAP_FEAT_ATTACH_INHERIT |
				 STALLCAP_FEAT_ATTACH_PARK |
				 STALLCAP_FEAT_ATTACH_RECV |
				 STALLCAP_FEAT_RECV_PIPE |
				 STALLCAP_FEAT_RECV_TTY |
				 STALLCAP_FEAT_WAIT_DEVICES |
				 STALLCAP_FEAT_WAIT_SPLICE |
				 STALLCAP_FEAT_WATCH_BUSY;
	if (STALLCAP_KERNEL_LOCKS)
		info.features |= STALLCAP_FEAT_KERNEL_LOCKS;
	if (IS_ENABLED(CONFIG_CFS_BANDWIDTH))
		info.features |= STALLCAP_FEAT_THROTTLE;
	if (IS_ENABLED(CONFIG_PSI))
		info.features |= STALLCAP_FEAT_MEMSTALL;
	if (stallcap_use_nmi)
		info.features |= STALLCAP_FEAT_NMI;
	if (sess->kaddr_visible)
		info.features |= STALLCAP_FEAT_KADDR;
	info.min_deadline_ns = stallcap_min_timeout_ns();
	info.max_ring_bytes = min_t(u64, (u64)stallcap_max_ring_kb * 1024,
				    U32_MAX);
	info.max_watches_per_user = stallcap_max_watches_per_user;
	info.arch = STALLCAP_ARCH_X86_64;
	info.sample_fixed_size = sizeof(struct stallcap_sample);
	info.mlock_bytes = stallcap_mlock_bytes();
	info.tsc_khz = stallcap_tsc_khz();
	if (info.tsc_khz)
		info.features |= STALLCAP_FEAT_DEADLINE_TSC;
	info.mlock_used_bytes = stallcap_mlock_used_bytes(current_uid());
	return arg_out((void __user *)arg, &info, sizeof(info), usize);
}

static long ioctl_attach(struct stallcap_session *sess, unsigned long arg)
{
	struct stallcap_attach a;
	u32 usize;
	int ret;

	ret = arg_in(&a, sizeof(a), STALLCAP_ATTACH_SIZE_VER0,
		     (void __user *)arg, &usize);
	if (ret)
		return ret;
	return stallcap_attach(sess, &a);
}

static long ioctl_detach(struct stallcap_session *sess, unsigned long arg)
{
	return stallcap_detach(sess, arg);
}

/* ---- dispatch ---- */

/**
 * struct stallcap_ioctl_desc - one command
 * @nr: _IOC_NR of the command
 * @dir: _IOC_DIR of the command
 * @fn: its handler, given the ioctl's argument
 */
struct stallcap_ioctl_desc {
	unsigned int nr;
	unsigned int dir;
	long (*fn)(struct stallcap_session *sess, unsigned long arg);
};

#define STALLCAP_IOCTL(cmd, handler) \
	{ .nr = _IOC_NR(cmd), .dir = _IOC_DIR(cmd), .fn = handler }

static const struct stallcap_ioctl_desc stallcap_ioctls[] = {
	STALLCAP_IOCTL(STALLCAP_IOC_ARM, ioctl_arm),
	STALLCAP_IOCTL(STALLCAP_IOC_REARM, ioctl_rearm),
	STALLCAP_IOCTL(STALLCAP_IOC_DISARM, ioctl_disarm),
	STALLCAP_IOCTL(STALLCAP_IOC_RELEASE, ioctl_release),
	STALLCAP_IOCTL(STALLCAP_IOC_SET_CONFIG, ioctl_set_config),
	STALLCAP_IOCTL(STALLCAP_IOC_GET_CONFIG, ioctl_get_config),
	STALLCAP_IOCTL(STALLCAP_IOC_GET_STATS, ioctl_get_stats),
	STALLCAP_IOCTL(STALLCAP_IOC_GET_INFO, ioctl_get_info),
	STALLCAP_IOCTL(STALLCAP_IOC_ATTACH, ioctl_attach),
	STALLCAP_IOCTL(STALLCAP_IOC_DETACH, ioctl_detach),
};

/**
 * stallcap_ioctl() - the session's ioctl entry point
 * @file: the session's file
 * @cmd: the command: type, number and direction matched, size bits ignored
 * @arg: its argument
 */
long stallcap_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	const struct stallcap_ioctl_desc *d;

	if (_IOC_TYPE(cmd) != STALLCAP_IOC_MAGIC)
		return -ENOTTY;
	for (d = stallcap_ioctls; d < stallcap_ioctls + ARRAY_SIZE(stallcap_ioctls); d++)
		if (d->nr == _IOC_NR(cmd) && d->dir == _IOC_DIR(cmd))
			return d->fn(file->private_data, arg);
	return -ENOTTY;
}
