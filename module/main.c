// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap: the misc device and its sessions (skeleton).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include <linux/stallcap.h>

static long stallcap_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return -ENOTTY;
}

static const struct file_operations stallcap_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = stallcap_ioctl,
};

static struct miscdevice stallcap_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "stallcap",
	.fops = &stallcap_fops,
	.mode = 0666,
};

static int __init stallcap_init(void)
{
	return misc_register(&stallcap_misc);
}

static void __exit stallcap_exit(void)
{
	misc_deregister(&stallcap_misc);
}

module_init(stallcap_init);
module_exit(stallcap_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Capture the stack of a thread that misses its deadline");
