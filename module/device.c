// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap's device node: /dev/stallcap, owned by root and a dedicated
 * group, mode 0660 by default, as /dev/kvm.  Whoever may open it may make
 * the machine send NMIs to the CPUs its threads run on.
 *
 * The module cannot create the group: its id comes from the gid= parameter
 * (0: root only).  udev names it (udev/60-stallcap.rules: GROUP="stallcap",
 * MODE="0660"); without udev, the devtmpfs node the misc core created is
 * given that group here, the way devtmpfs itself sets a node's owner.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/moduleparam.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/uidgid.h>

#include "compat.h"
#include "stallcap.h"

static unsigned short dev_mode = 0660;
module_param_named(mode, dev_mode, ushort, 0444);
MODULE_PARM_DESC(mode, "Mode of /dev/stallcap (default 0660: root and group gid)");

static unsigned int dev_gid;
module_param_named(gid, dev_gid, uint, 0444);
MODULE_PARM_DESC(gid, "Group of /dev/stallcap, the id of group stallcap (default 0: root)");

static struct miscdevice stallcap_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "stallcap",
	.fops = &stallcap_fops,
};

/* Give the devtmpfs node of our device the group gid=. */
static void device_set_group(void)
{
	struct iattr ia = {
		.ia_valid = ATTR_GID,
		.ia_gid = make_kgid(&init_user_ns, dev_gid),
	};
	struct inode *inode;
	struct path path;
	int ret = -ENODEV;

	if (!dev_gid)
		return;
	if (kern_path("/dev/stallcap", 0, &path)) {
		pr_info("no /dev/stallcap yet: its group comes from udev\n");
		return;
	}
	inode = d_inode(path.dentry);
	if (S_ISCHR(inode->i_mode) &&
	    inode->i_rdev == stallcap_misc.this_device->devt) {
		ret = mnt_want_write(path.mnt);
		if (!ret) {
			inode_lock(inode);
			ret = stallcap_notify_change(path.dentry, &ia);
			inode_unlock(inode);
			mnt_drop_write(path.mnt);
		}
	}
	if (ret)
		pr_warn("cannot give /dev/stallcap group %u: %d\n", dev_gid, ret);
	path_put(&path);
}

int stallcap_device_init(void)
{
	int ret;

	if (dev_mode & ~0777 || !gid_valid(make_kgid(&init_user_ns, dev_gid))) {
		pr_err("mode=%#o gid=%u: invalid\n", dev_mode, dev_gid);
		return -EINVAL;
	}
	stallcap_misc.mode = dev_mode;
	ret = misc_register(&stallcap_misc);
	if (!ret)
		device_set_group();
	return ret;
}

void stallcap_device_exit(void)
{
	misc_deregister(&stallcap_misc);
}
