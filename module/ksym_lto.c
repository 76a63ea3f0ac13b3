// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap: the names that a kernel linked by ThinLTO gave the functions the
 * attach probes.
 *
 * Clang's ThinLTO (CONFIG_LTO_CLANG: Android's, ChromeOS's and CachyOS's
 * kernels) renames a static function that another unit uses after importing
 * it: pipe_read() and fuse_dev_read(), whose addresses the pipe's and
 * /dev/fuse's file operations hold, become "pipe_read.llvm.3174482935419761955"
 * and the like.  Since Linux 6.11 kallsyms, hence register_kprobe(), matches
 * names exactly: "pipe_read" is not found.  The renamed symbol is the same
 * function, so a probe of it is right; a name that more than one such
 * symbol carries (static functions of one name in several units) is left
 * unresolved.  The names are read from /proc/kallsyms (from the kernel, by
 * seq_read_iter(): that proc file has no read_iter for kernel_read()) by a
 * kernel worker, whose root is the machine's: the caller's root and mount
 * namespace are its own to arrange (a user namespace may bind anything over
 * its /proc/kallsyms: a file that is no seq_file, or a FIFO that blocks the
 * open).  On a kernel not linked by LTO it is never read.  A module loaded
 * since the last read (fuse, a driver) may hold such names too:
 * stallcap_ksym_lto_loads() tells when to read again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

#define LTO_SUFFIX	".llvm."
#define KALLSYMS_CHUNK	(16 * 1024)

/* a name found, kept while a probe may point at it (until unload) */
struct lto_name {
	struct list_head node;
	char name[];
};

static LIST_HEAD(lto_names);		/* attach_lock */
static atomic_t module_loads = ATOMIC_INIT(0);

/**
 * struct lto_lookup - the names looked for in one read of /proc/kallsyms
 * @names: the functions' names
 * @found: each one's ThinLTO name when found (an ERR_PTR when ambiguous)
 * @n: how many
 */
struct lto_lookup {
	const char *const *names;
	const char **found;
	unsigned int n;
};

/**
 * stallcap_ksym_base_len() - the length of symbol @name without a ThinLTO
 * suffix (".llvm." and digits; names are compared without it)
 * @name: a symbol's name
 */
size_t stallcap_ksym_base_len(const char *name)
{
	const char *suffix = strstr(name, LTO_SUFFIX);

	return suffix ? suffix - name : strlen(name);
}

/* the struct holding a name found */
static struct lto_name *lto_name_of(const char *name)
{
	return container_of(name, struct lto_name, name[0]);
}

/* "NAME.llvm.DIGITS": is @sym @name's ThinLTO name? */
static bool is_lto_name_of(const char *sym, size_t len, const char *name)
{
	size_t n = strlen(name), i;

	if (len <= n + sizeof(LTO_SUFFIX) - 1 || strncmp(sym, name, n) ||
	    strncmp(sym + n, LTO_SUFFIX, sizeof(LTO_SUFFIX) - 1))
		return false;
	for (i = n + sizeof(LTO_SUFFIX) - 1; i < len; i++) {
		if (sym[i] < '0' || sym[i] > '9')
			return false;
	}
	return true;
}

/* one line of /proc/kallsyms: "ADDRESS TYPE NAME[\t[MODULE]]" */
static void lto_lookup_line(struct lto_lookup *l, const char *line,
			    size_t len)
{
	const char *sym, *end = line + len;
	struct lto_name *keep;
	size_t sym_len;
	unsigned int i;

	sym = memchr(line, ' ', len);
	sym = sym ? memchr(sym + 1, ' ', end - sym - 1) : NULL;
	if (!sym++)
		return;
	sym_len = strcspn(sym, "\t");
	if (sym + sym_len > end)
		sym_len = end - sym;
	if (!strnstr(sym, LTO_SUFFIX, sym_len))
		return;
	for (i = 0; i < l->n; i++) {
		if (!is_lto_name_of(sym, sym_len, l->names[i]))
			continue;
		if (IS_ERR(l->found[i]))
			continue;
		if (l->found[i]) {	/* a second one: which is meant? */
			kfree(lto_name_of(l->found[i]));
			l->found[i] = ERR_PTR(-EEXIST);
			continue;
		}
		keep = kmalloc(struct_size(keep, name, sym_len + 1),
			       GFP_KERNEL);
		if (!keep)
			continue;
		memcpy(keep->name, sym, sym_len);
		keep->name[sym_len] = '\0';
		l->found[i] = keep->name;
	}
}

/* the complete lines of @buf[0..@len); returns the length of the rest */
static size_t lto_lookup_lines(struct lto_lookup *l, char *buf, size_t len)
{
	char *line = buf, *nl;

	while ((nl = memchr(line, '\n', buf + len - line))) {
		*nl = '\0';
		lto_lookup_line(l, line, nl - line);
		line = nl + 1;
	}
	len -= line - buf;
	memmove(buf, line, len);
	return len;
}

/* read @f (a seq_file) from @pos into @buf[0..@size) */
static ssize_t seq_file_read(struct file *f, char *buf, size_t size,
			     loff_t *pos)
{
	struct kvec kv = { .iov_base = buf, .iov_len = size };
	struct iov_iter iter;
	struct kiocb kiocb;
	ssize_t ret;

	init_sync_kiocb(&kiocb, f);
	kiocb.ki_pos = *pos;
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, size);
	ret = seq_read_iter(&kiocb, &iter);
	*pos = kiocb.ki_pos;
	return ret;
}

static int lto_lookup_read(struct lto_lookup *l)
{
	size_t kept = 0;
	loff_t pos = 0;
	struct file *f;
	ssize_t ret;
	char *buf;

	f = filp_open("/proc/kallsyms", O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	buf = kvmalloc(KALLSYMS_CHUNK, GFP_KERNEL);
	ret = buf ? 0 : -ENOMEM;
	while (buf) {
		ret = seq_file_read(f, buf + kept, KALLSYMS_CHUNK - kept, &pos);
		if (ret <= 0)
			break;
		kept = lto_lookup_lines(l, buf, kept + ret);
		if (kept == KALLSYMS_CHUNK)	/* no line is that long */
			kept = 0;
		cond_resched();
	}
	kvfree(buf);
	filp_close(f, NULL);
	return ret;
}

struct lto_read_work {
	struct work_struct work;
	struct lto_lookup *lookup;
	int ret;
};

static void lto_read_fn(struct work_struct *work)
{
	struct lto_read_work *rw = container_of(work, struct lto_read_work,
						work);

	rw->ret = lto_lookup_read(rw->lookup);
}

/* lto_lookup_read() in a kernel worker: the machine's root, not the caller's */
static int lto_lookup_read_in_worker(struct lto_lookup *l)
{
	struct lto_read_work rw = { .lookup = l };

	INIT_WORK_ONSTACK(&rw.work, lto_read_fn);
	queue_work(system_unbound_wq, &rw.work);
	flush_work(&rw.work);
	destroy_work_on_stack(&rw.work);
	return rw.ret;
}

/**
 * stallcap_ksym_lto_names() - find the ThinLTO names of functions
 * @names: the functions' names (register_kprobe() found none of them)
 * @found: set to each one's "NAME.llvm.N" when the kernel has exactly one
 *	(kept until stallcap_ksym_lto_exit()), else NULL
 * @n: how many
 *
 * Context: process, may sleep; attach_lock held.  Reads /proc/kallsyms
 * once (a few hundred milliseconds under emulation).
 * Return: how many were found, or -errno when /proc/kallsyms could not be
 * read (none is then).
 */
int stallcap_ksym_lto_names(const char *const *names, const char **found,
			    unsigned int n)
{
	struct lto_lookup l = { .names = names, .found = found, .n = n };
	unsigned int i;
	int ret, nr = 0;

	memset(found, 0, n * sizeof(*found));
	ret = lto_lookup_read_in_worker(&l);
	for (i = 0; i < n; i++) {
		if (!IS_ERR_OR_NULL(found[i]) && ret >= 0) {
			list_add(&lto_name_of(found[i])->node, &lto_names);
			nr++;
			continue;
		}
		if (!IS_ERR_OR_NULL(found[i]))
			kfree(lto_name_of(found[i]));
		found[i] = NULL;
	}
	return ret < 0 ? ret : nr;
}

/**
 * stallcap_ksym_lto_loads() - how many modules were loaded so far
 *
 * A name looked for in vain may be found after a load.
 */
unsigned int stallcap_ksym_lto_loads(void)
{
	return atomic_read(&module_loads);
}

static int lto_module_notify(struct notifier_block *nb, unsigned long state,
			     void *data)
{
	if (state == MODULE_STATE_LIVE)
		atomic_inc(&module_loads);
	return NOTIFY_DONE;
}

static struct notifier_block lto_module_nb = {
	.notifier_call = lto_module_notify,
};

/** stallcap_ksym_lto_init() - count module loads (an LTO kernel's only) */
void stallcap_ksym_lto_init(void)
{
	if (IS_ENABLED(CONFIG_LTO_CLANG))
		register_module_notifier(&lto_module_nb);
}

/** stallcap_ksym_lto_exit() - free the names (no probe uses them now) */
void stallcap_ksym_lto_exit(void)
{
	struct lto_name *p, *tmp;

	if (IS_ENABLED(CONFIG_LTO_CLANG))
		unregister_module_notifier(&lto_module_nb);
	list_for_each_entry_safe(p, tmp, &lto_names, node)
		kfree(p);
}
