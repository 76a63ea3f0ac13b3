// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): copies of mapped files that were deleted while mapped.
 *
 * A server running since before an upgrade maps files the package manager
 * has since replaced: /proc/PID/maps names them "PATH (deleted)", no path
 * reaches them, and a report made later would leave their frames
 * unresolved.  While recording, the process still maps the very file:
 * /proc/PID/map_files/ opens it.  The recorder copies it, once per
 * build-id, into a directory of kept files (as perf's ~/.debug build-id
 * cache), and reports look there by the recorded build-id:
 *
 *   $STALLCAP_KEEP_DIR, else $XDG_CACHE_HOME/stallcap/deleted, else
 *   $HOME/.cache/stallcap/deleted; in it BUILDID-HEX/elf
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

static const char deleted_suffix[] = " (deleted)";

/**
 * kept_elf_deleted() - whether a maps path names a file deleted while mapped
 * @path: the path as /proc/PID/maps gives it
 */
bool kept_elf_deleted(const char *path)
{
	size_t n = strlen(path), s = sizeof(deleted_suffix) - 1;

	return path[0] == '/' && n > s && !strcmp(path + n - s, deleted_suffix);
}

/* the directory of kept files in @buf; -1 if no directory can be named */
static int kept_dir(char *buf, size_t len)
{
	const char *d = getenv("STALLCAP_KEEP_DIR"), *base;
	char cwd[4096];
	int n;

	if (d && *d == '/')
		n = snprintf(buf, len, "%s", d);
	else if (d && *d)	/* relative: to where the tool was started */
		n = getcwd(cwd, sizeof(cwd)) ? snprintf(buf, len, "%s/%s", cwd, d) : -1;
	else if ((base = getenv("XDG_CACHE_HOME")) && *base == '/')
		n = snprintf(buf, len, "%s/stallcap/deleted", base);
	else if ((base = getenv("HOME")) && *base == '/')
		n = snprintf(buf, len, "%s/.cache/stallcap/deleted", base);
	else
		return -1;
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/**
 * kept_elf_path() - where the kept copy of @m's file is (or would be)
 * @m: a mapping with a build-id
 * @buf: output
 * @len: its size
 *
 * Returns 0, or -1 when @m has no build-id or no directory can be named.
 */
int kept_elf_path(const struct sc_map *m, char *buf, size_t len)
{
	size_t n;
	__u32 i;

	if (!m->build_id_len || kept_dir(buf, len))
		return -1;
	n = strlen(buf);
	if (n + 2 * m->build_id_len + sizeof("/elf") + 1 > len)
		return -1;
	buf[n++] = '/';
	for (i = 0; i < m->build_id_len; i++, n += 2)
		snprintf(buf + n, len - n, "%02x", m->build_id[i]);
	snprintf(buf + n, len - n, "/elf");
	return 0;
}

/* mkdir -p of @path's parent directories (mode 0700) */
static int make_parents(char *path)
{
	char *p;

	for (p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

static int copy_fd(int in, int out)
{
	struct stat st;
	off_t off = 0;
	ssize_t n;

	if (fstat(in, &st))
		return -1;
	while (off < st.st_size) {
		n = sendfile(out, in, &off, (size_t)(st.st_size - off));
		if (n <= 0)
			return -1;
	}
	return 0;
}

/**
 * kept_elf_save() - keep a copy of a deleted mapped file, once per build-id
 * @fd: the file as mapped (/proc/PID/map_files/...), at any offset
 * @m: its mapping, with the build-id read from @fd
 *
 * Written to a temporary name and renamed, so a report never reads half a
 * file.  Returns 0 when the copy is there, -1 otherwise.
 */
int kept_elf_save(int fd, const struct sc_map *m)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	int out, ret;

	if (kept_elf_path(m, path, sizeof(path)))
		return -1;
	if (!access(path, R_OK))
		return 0;
	if (make_parents(path))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return -1;
	ret = copy_fd(fd, out);
	if (close(out) || ret || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
