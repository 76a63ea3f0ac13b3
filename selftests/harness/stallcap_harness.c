// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap_harness: a test-only module that misbehaves on purpose, so that
 * scripts/vmtest.sh --selfcheck can prove the harness reports it.
 *
 *  warn_on_load=1	WARN() in module_init (a kernel splat in dmesg)
 *  leak_on_load=1	leak a kmalloc()ed buffer (for kmemleak)
 *
 * It also registers /dev/stallcap_harness: a process that keeps it open
 * makes rmmod fail.  Never load it outside the harness.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>

static bool warn_on_load;
module_param(warn_on_load, bool, 0444);
MODULE_PARM_DESC(warn_on_load, "WARN() when loaded");

static bool leak_on_load;
module_param(leak_on_load, bool, 0444);
MODULE_PARM_DESC(leak_on_load, "leak a buffer when loaded");

static void *leaked;

static const struct file_operations harness_fops = {
	.owner = THIS_MODULE,
};

static struct miscdevice harness_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "stallcap_harness",
	.fops = &harness_fops,
	.mode = 0666,
};

static noinline void stallcap_harness_leak(void)
{
	leaked = kmalloc(512, GFP_KERNEL);
	/* forget it: only the pointer's copy on the stack remains, briefly */
	WRITE_ONCE(leaked, NULL);
}

static int __init stallcap_harness_init(void)
{
	WARN(warn_on_load, "stallcap_harness: deliberate warning for the harness self-check\n");
	if (leak_on_load)
		stallcap_harness_leak();
	return misc_register(&harness_misc);
}

static void __exit stallcap_harness_exit(void)
{
	misc_deregister(&harness_misc);
}

module_init(stallcap_harness_init);
module_exit(stallcap_harness_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("stallcap test harness self-check module (misbehaves on purpose)");
