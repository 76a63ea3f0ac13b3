/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event sources whose blocking read() is a program's wait for its next
 * event, each as its users drive it: fanotify (a file access monitor), a
 * userfaultfd (a fault handler: live migration, a checkpoint's lazy
 * restore), /dev/fuse (a FUSE server's wait for requests: any libfuse
 * file system; libfuse 3's splice() into a pipe as well, sshfs's and
 * fuse-overlayfs's way), an RTC's update interrupts (a loop paced by the
 * clock chip), an input device's events (a game's or a kiosk's input
 * loop; the device made with uinput), a UIO driver's interrupt (an RT
 * control loop's device in user space: QEMU's edu device bound to
 * uio_pci_generic, its interrupt raised through its registers, and
 * acknowledged and unmasked by the loop).
 * attach_test: one thread waits in the read, another makes the event
 * happen; the read's O_NONBLOCK variant (fcntl on the same descriptor) is
 * a try.
 */
#ifndef STALLCAP_EVENT_SOURCES_H
#define STALLCAP_EVENT_SOURCES_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/input.h>
#include <linux/uinput.h>
#include <linux/fuse.h>
#include <linux/rtc.h>
#include <linux/userfaultfd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* ES_* : which source (the attach_test child's "how" letters) */
#define ES_FANOTIFY	'K'
#define ES_USERFAULTFD	'X'
#define ES_FUSE		'H'
#define ES_FUSE_SPLICE	'L'	/* FUSE, its requests splice()d into a pipe */
#define ES_RTC		'C'
#define ES_EVDEV	'V'
#define ES_UIO		'O'

struct event_source {
	char how;
	int fd;			/* the descriptor read, blocking */
	void *page;		/* userfaultfd: the registered page */
	int aux;		/* evdev: the uinput device; UIO: its BAR 0 */
	int cfg;		/* UIO: the PCI device's config space */
	int pipe[2];		/* FUSE_SPLICE: the requests' pipe */
	volatile uint32_t *regs; /* UIO: the edu device's registers */
	long psize;
	char path[64];		/* fanotify: the file; FUSE: the mount point */
	ssize_t got;		/* what the blocking read returned */
	/* FUSE needs FUSE_MIN_READ_BUFFER (8 KiB) to read a request */
	uint64_t buf[16384 / 8];
};

static int es_errno(void)
{
	return errno ? -errno : -EIO;
}

static bool es_fuse(const struct event_source *es)
{
	return es->how == ES_FUSE || es->how == ES_FUSE_SPLICE;
}

/* Open @path, a device node that devtmpfs makes as the device appears (2 s) */
static int es_open_node(const char *path, int flags)
{
	int fd, i;

	for (i = 0; i < 200 && (fd = open(path, flags | O_CLOEXEC)) < 0; i++)
		usleep(10000);
	return fd;
}

/* fanotify: the opens of one file of /tmp */
static int es_open_fanotify(struct event_source *es)
{
	int fd;

	es->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
	if (es->fd < 0)
		return es_errno();
	snprintf(es->path, sizeof(es->path), "/tmp/stallcap-fanotify.%d", getpid());
	fd = open(es->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return es_errno();
	close(fd);
	if (fanotify_mark(es->fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, es->path))
		return es_errno();
	return 0;
}

/* userfaultfd: the first touch of one registered anonymous page */
static int es_open_userfaultfd(struct event_source *es)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	es->fd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (es->fd < 0 || ioctl(es->fd, UFFDIO_API, &api))
		return es_errno();
	es->page = mmap(NULL, es->psize, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (es->page == MAP_FAILED) {
		es->page = NULL;
		return es_errno();
	}
	reg.range.start = (uintptr_t)es->page;
	reg.range.len = es->psize;
	if (ioctl(es->fd, UFFDIO_REGISTER, &reg))
		return es_errno();
	return 0;
}

/* FUSE: reply to request @unique with @error and @len bytes of @data */
static int es_fuse_reply(struct event_source *es, uint64_t unique, int error,
			 const void *data, size_t len)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh) + len, .error = error, .unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &oh, .iov_len = sizeof(oh) },
		{ .iov_base = (void *)data, .iov_len = len },
	};

	return writev(es->fd, iov, len ? 2 : 1) == (ssize_t)oh.len ? 0 : -1;
}

/*
 * FUSE: a file system of one empty directory, mounted on a new directory
 * of /tmp (@path) and its INIT answered: the next read waits for a request
 */
static int es_open_fuse(struct event_source *es, const char *path)
{
	const struct fuse_in_header *ih = (const void *)es->buf;
	const struct fuse_init_in *in = (const void *)(ih + 1);
	struct fuse_init_out out = {
		.major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = es->psize, .max_write = es->psize,
		.time_gran = 1,
	};
	char opts[96];

	es->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (es->fd < 0)
		return es_errno();
	snprintf(es->path, sizeof(es->path), "%s", path);
	if (mkdir(es->path, 0700) && errno != EEXIST)
		return es_errno();
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0",
		 es->fd);
	if (mount("stallcap-fuse", es->path, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		int err = es_errno();

		rmdir(es->path);
		es->path[0] = 0;
		return err;
	}
	/* (an older kernel's INIT is shorter: up to flags, 16 bytes on 5.10) */
	if (read(es->fd, es->buf, sizeof(es->buf)) <
	    (ssize_t)(sizeof(*ih) + offsetof(struct fuse_init_in, flags) + sizeof(in->flags)) ||
	    ih->opcode != FUSE_INIT)
		return -EPROTO;
	if (in->minor < out.minor)
		out.minor = in->minor;
	return es_fuse_reply(es, ih->unique, 0, &out, sizeof(out)) ? es_errno() : 0;
}

/* RTC: its update interrupt, once a second */
static int es_open_rtc(struct event_source *es)
{
	es->fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC);
	if (es->fd < 0 || ioctl(es->fd, RTC_UIE_ON, 0))
		return es_errno();
	return 0;
}

/* evdev: a keyboard of one key made with uinput, its event device read */
static int es_open_evdev(struct event_source *es)
{
	struct uinput_setup setup = { .id.bustype = BUS_VIRTUAL };
	char sysname[32], path[300];
	struct dirent *de;
	DIR *d;

	es->aux = open("/dev/uinput", O_WRONLY | O_CLOEXEC);
	if (es->aux < 0)
		return es_errno();
	snprintf(setup.name, sizeof(setup.name), "stallcap-key");
	if (ioctl(es->aux, UI_SET_EVBIT, EV_KEY) ||
	    ioctl(es->aux, UI_SET_KEYBIT, KEY_A) ||
	    ioctl(es->aux, UI_DEV_SETUP, &setup) || ioctl(es->aux, UI_DEV_CREATE) ||
	    ioctl(es->aux, UI_GET_SYSNAME(sizeof(sysname)), sysname) < 0)
		return es_errno();
	/* its event device: /sys/devices/virtual/input/inputN/eventM */
	snprintf(path, sizeof(path), "/sys/devices/virtual/input/%s", sysname);
	d = opendir(path);
	if (!d)
		return es_errno();
	while ((de = readdir(d)) && strncmp(de->d_name, "event", 5))
		;
	if (de)
		snprintf(path, sizeof(path), "/dev/input/%s", de->d_name);
	closedir(d);
	if (!de)
		return -ENODEV;	/* no evdev */
	es->fd = es_open_node(path, O_RDONLY);
	return es->fd < 0 ? es_errno() : 0;
}

/*
 * UIO: uio_pci_generic masks the device's INTx in its handler; the driver
 * in user space unmasks it in the PCI command register, through the
 * device's config space in sysfs (as the kernel's UIO how-to does)
 */
static int es_uio_unmask(struct event_source *es)
{
	uint16_t cmd;

	if (pread(es->cfg, &cmd, sizeof(cmd), 4) != sizeof(cmd))
		return -1;
	cmd &= ~0x400;	/* PCI_COMMAND_INTX_DISABLE */
	return pwrite(es->cfg, &cmd, sizeof(cmd), 4) == sizeof(cmd) ? 0 : -1;
}

/* UIO: QEMU's edu device (1234:11e8), bound to uio_pci_generic */
static int es_open_uio(struct event_source *es)
{
	char path[300], ids[256];
	struct dirent *de, *ue;
	DIR *d, *u = NULL;
	int fd;

	fd = open("/sys/bus/pci/drivers/uio_pci_generic/new_id", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return es_errno();	/* no uio_pci_generic */
	/* EEXIST: bound by an earlier test */
	if (write(fd, "1234 11e8", 9) != 9 && errno != EEXIST) {
		close(fd);
		return es_errno();
	}
	close(fd);
	d = opendir("/sys/bus/pci/drivers/uio_pci_generic");
	while (d && (de = readdir(d))) {
		if (strchr(de->d_name, ':')) {	/* a bound device: 0000:00:04.0 */
			snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/uio",
				 de->d_name);
			u = opendir(path);
			break;
		}
	}
	if (d)
		closedir(d);
	if (!u)
		return -ENODEV;	/* no edu device */
	while ((ue = readdir(u)) && strncmp(ue->d_name, "uio", 3))
		;
	snprintf(ids, sizeof(ids), "%s", ue ? ue->d_name : "");
	closedir(u);
	if (!ids[0])
		return -ENODEV;
	snprintf(path, sizeof(path), "/dev/%s", ids);
	es->fd = es_open_node(path, O_RDWR);
	snprintf(path, sizeof(path), "/sys/class/uio/%s/device/resource0", ids);
	es->aux = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	snprintf(path, sizeof(path), "/sys/class/uio/%s/device/config", ids);
	es->cfg = open(path, O_RDWR | O_CLOEXEC);
	if (es->fd < 0 || es->aux < 0 || es->cfg < 0)
		return es_errno();
	es->regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, es->aux, 0);
	if (es->regs == MAP_FAILED) {
		es->regs = NULL;
		return es_errno();
	}
	/* the device answers its identification (0xRRrr00ed) */
	if ((es->regs[0] & 0xff) != 0xed)
		return -ENODEV;
	return es_uio_unmask(es) ? es_errno() : 0;
}

/**
 * es_open() - set up source @how; @fuse_path: where FUSE mounts
 * Return: 0, or -errno (the test skips: this kernel or guest lacks it)
 */
static int es_open(struct event_source *es, char how, const char *fuse_path)
{
	memset(es, 0, sizeof(*es));
	es->how = how;
	es->fd = -1;
	es->aux = -1;
	es->cfg = -1;
	es->pipe[0] = es->pipe[1] = -1;
	es->psize = sysconf(_SC_PAGESIZE);
	switch (how) {
	case ES_FANOTIFY:
		return es_open_fanotify(es);
	case ES_USERFAULTFD:
		return es_open_userfaultfd(es);
	case ES_FUSE:
		return es_open_fuse(es, fuse_path);
	case ES_FUSE_SPLICE:
		if (pipe2(es->pipe, O_CLOEXEC))
			return es_errno();
		return es_open_fuse(es, fuse_path);
	case ES_RTC:
		return es_open_rtc(es);
	case ES_EVDEV:
		return es_open_evdev(es);
	case ES_UIO:
		return es_open_uio(es);
	}
	return -EINVAL;
}

/*
 * The event, made by another thread (the RTC's comes by itself): an open
 * of the marked file, a touch of the page (blocks until the fault is
 * handled), a lookup in the FUSE mount (until the server answers), a key
 * press, the edu device's interrupt raised (its register 0x60)
 */
static void es_trigger(struct event_source *es)
{
	struct input_event ev[2] = {
		{ .type = EV_KEY, .code = KEY_A, .value = 1 },
		{ .type = EV_SYN, .code = SYN_REPORT },
	};
	char path[96];
	struct stat st;
	int fd;

	switch (es->how) {
	case ES_FANOTIFY:
		fd = open(es->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		break;
	case ES_USERFAULTFD:
		(void)*(volatile char *)es->page;
		break;
	case ES_FUSE:
	case ES_FUSE_SPLICE:
		snprintf(path, sizeof(path), "%s/x", es->path);
		(void)stat(path, &st);	/* ENOENT, the server's answer */
		break;
	case ES_EVDEV:
		(void)!write(es->aux, ev, sizeof(ev));
		break;
	case ES_UIO:
		es->regs[0x60 / 4] = 1;
		break;
	}
}

/* What a read asks for: an RTC's or UIO's count, one fault, all else */
static size_t es_read_size(const struct event_source *es)
{
	switch (es->how) {
	case ES_RTC:
		return sizeof(unsigned long);
	case ES_UIO:
		return sizeof(int32_t);
	case ES_USERFAULTFD:
		return sizeof(struct uffd_msg);
	}
	return sizeof(es->buf);
}

/*
 * The read, of the source's descriptor or (FUSE_SPLICE, libfuse 3) into
 * the pipe and then from it as libfuse does: what read() or splice() did
 */
static ssize_t es_read(struct event_source *es)
{
	ssize_t n;

	if (es->how != ES_FUSE_SPLICE)
		return read(es->fd, es->buf, es_read_size(es));
	n = splice(es->fd, NULL, es->pipe[1], NULL, sizeof(es->buf), 0);
	if (n > 0 && read(es->pipe[0], es->buf, n) != n)
		return -1;
	return n;
}

/* The blocking read: a wait for the event.  Returns what it did. */
static ssize_t es_wait(struct event_source *es)
{
	es->got = es_read(es);
	return es->got;
}

/*
 * What a program does with the event read: closes fanotify's descriptor of
 * the opened file, maps a zero page at the fault, answers the request
 * (ENOENT: the directory is empty).  Returns 0, or -1 if the read was not
 * that event.
 */
static int es_handle(struct event_source *es)
{
	const struct fanotify_event_metadata *m = (const void *)es->buf;
	const struct fuse_in_header *ih = (const void *)es->buf;
	const struct uffd_msg *msg = (const void *)es->buf;
	struct uffdio_range range = {
		.start = (uintptr_t)es->page, .len = es->psize,
	};
	struct uffdio_zeropage zp = { .range = range };

	switch (es->how) {
	case ES_FANOTIFY:
		if (es->got < (ssize_t)sizeof(*m) || !(m->mask & FAN_OPEN))
			return -1;
		if (m->fd >= 0)
			close(m->fd);
		return 0;
	case ES_USERFAULTFD:
		if (es->got != sizeof(*msg) || msg->event != UFFD_EVENT_PAGEFAULT)
			return -1;
		return ioctl(es->fd, UFFDIO_ZEROPAGE, &zp) ? -1 : 0;
	case ES_FUSE:
	case ES_FUSE_SPLICE:
		if (es->got < (ssize_t)sizeof(*ih))
			return -1;
		return es_fuse_reply(es, ih->unique, -ENOENT, NULL, 0);
	case ES_RTC:
		return es->got == sizeof(unsigned long) ? 0 : -1;
	case ES_EVDEV:
		return es->got >= (ssize_t)sizeof(struct input_event) &&
		       ((const struct input_event *)es->buf)->type == EV_KEY ? 0 : -1;
	case ES_UIO:
		/* acknowledged, then its interrupt unmasked again */
		if (es->got != sizeof(int32_t))
			return -1;
		es->regs[0x64 / 4] = 1;
		return es_uio_unmask(es);
	}
	return -1;
}

/*
 * The same read on the descriptor made non-blocking: no event is pending,
 * so it fails with EAGAIN (an RTC's next update may have come meanwhile on
 * a slow host: its data then).  Returns 0 if it did so, else -1.
 */
static int es_try(struct event_source *es)
{
	int fl = fcntl(es->fd, F_GETFL);

	if (fl < 0 || fcntl(es->fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	if (es_read(es) >= 0)
		return es->how == ES_RTC ? 0 : -1;
	return errno == EAGAIN ? 0 : -1;
}

/* Undo es_open(), whatever it got to */
static void es_close(struct event_source *es)
{
	if (es->how == ES_RTC && es->fd >= 0)
		ioctl(es->fd, RTC_UIE_OFF, 0);
	if (es_fuse(es) && es->path[0]) {
		umount2(es->path, MNT_DETACH);
		rmdir(es->path);
	}
	if (es->fd >= 0)
		close(es->fd);
	if (es->page)
		munmap(es->page, es->psize);
	if (es->regs)
		munmap((void *)es->regs, 4096);
	if (es->how == ES_EVDEV && es->aux >= 0)
		ioctl(es->aux, UI_DEV_DESTROY);
	if (es->aux >= 0)
		close(es->aux);
	if (es->cfg >= 0)
		close(es->cfg);
	if (es->pipe[0] >= 0)
		close(es->pipe[0]);
	if (es->pipe[1] >= 0)
		close(es->pipe[1]);
	if (es->how == ES_FANOTIFY && es->path[0])
		unlink(es->path);
	es->fd = -1;
	es->aux = -1;
	es->cfg = -1;
	es->pipe[0] = es->pipe[1] = -1;
	es->page = NULL;
	es->regs = NULL;
	es->path[0] = 0;
}

#endif /* STALLCAP_EVENT_SOURCES_H */
