// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap archive: pack what a report of a record file needs on another
 * machine, as perf archive does: every file the recorded processes mapped
 * executable (the one with the recorded build-id only) and its debug file,
 * found by elfutils' standard search (/usr/lib/debug/.build-id, the
 * .gnu_debuglink next to the file, in .debug/ or under /usr/lib/debug).
 * A file deleted while mapped (a server upgraded in place) is packed from
 * the copy the recorder kept (kept_elf.c), under the path the maps gave it
 * ("PATH (deleted)"), where report --symfs looks.
 * The archive is a tar (tar(1) writes it) laid out as the root directory:
 *
 *   stallcap archive server.data                   # server.data.tar.gz
 *   mkdir prod && tar -xzf server.data.tar.gz -C prod
 *   stallcap report --symfs prod server.data
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <elfutils/libdwfl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

extern char **environ;

/* the files to pack, each once */
struct archive {
	struct sc_sink sink;	/* first */
	struct htab seen;
	struct apath *all;
	unsigned int nr, changed;
};

struct apath {
	struct hnode node;
	struct apath *next;
	char *as;		/* its name in the archive, if not @path */
	char path[];
};

static const char archive_help[] =
"usage: stallcap archive [FILE] [-o OUT]\n\n"
"Pack the files a report of FILE (default stallcap.data) needs elsewhere:\n"
"the binaries and libraries its processes ran (those whose build-id is the\n"
"recorded one), the copies kept of those deleted while mapped, and their\n"
"debug files, into OUT (default FILE.tar.gz), a\n"
"gzipped tar laid out as the root directory: unpacked into a directory\n"
"elsewhere, that directory is the one to give to report's symfs option.\n\n"
"  -o, --output OUT     the archive\n"
"  -h, --help           this text\n";

static bool seen(const struct archive *ar, const char *path)
{
	struct hnode *n;

	htab_for_each_possible(&ar->seen, n, hash_bytes(path, strlen(path), 0))
		if (!strcmp(container_of(n, struct apath, node)->path, path))
			return true;
	return false;
}

/* @path, packed as @as (NULL: as @path) */
static int add_path_as(struct archive *ar, const char *path, const char *as)
{
	__u64 h = hash_bytes(path, strlen(path), 0);
	struct apath *p;

	if (seen(ar, path))
		return 0;
	p = malloc(sizeof(*p) + strlen(path) + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p->path, path, strlen(path) + 1);
	p->as = as ? strdup(as) : NULL;
	if ((as && !p->as) || htab_add(&ar->seen, &p->node, h)) {
		free(p->as);
		free(p);
		return -ENOMEM;
	}
	p->next = ar->all;
	ar->all = p;
	ar->nr++;
	return 0;
}

static int add_path(struct archive *ar, const char *path)
{
	return add_path_as(ar, path, NULL);
}

static bool build_id_matches(const struct sc_map *m)
{
	__u8 id[SC_BUILD_ID_MAX];
	__u32 len = 0;

	if (!m->build_id_len)
		return true;
	return !elf_file_build_id(m->path, id, &len) && len == m->build_id_len &&
	       !memcmp(id, m->build_id, len);
}

/* the debug file elfutils' standard search finds for @path, added */
static int add_debug_file(struct archive *ar, const char *path)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	const char *main_file = NULL, *debug_file = NULL;
	Dwfl *d = dwfl_begin(&cb);
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	int ret = 0;

	if (!d)
		return -ENOMEM;
	mod = dwfl_report_offline(d, path, path, -1);
	if (mod && dwfl_module_getdwarf(mod, &bias))
		dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug_file);
	if (debug_file && (!main_file || strcmp(debug_file, main_file)))
		ret = add_path(ar, debug_file);
	dwfl_end(d);
	return ret;
}

/*
 * @m's file was deleted while mapped: the copy kept of it (by its build-id),
 * packed under the mapped path, and its debug file
 */
static int add_kept(struct archive *ar, const struct sc_map *m)
{
	char kept[PATH_MAX];
	int ret;

	if (kept_elf_path(m, kept, sizeof(kept)) || access(kept, R_OK) ||
	    strchr(m->path, '\n') || strchr(m->path, '\001')) {
		warnx_("%s: deleted while mapped and no copy kept, left out (see "
		       "STALLCAP_KEEP_DIR in stallcap(1))", m->path);
		ar->changed++;
		return 0;
	}
	ret = add_path_as(ar, kept, m->path);
	return ret ? ret : add_debug_file(ar, kept);
}

static int on_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	struct archive *ar = (struct archive *)sk;
	unsigned int i;
	int ret;

	for (i = 0; i < p->nr_maps; i++) {
		const struct sc_map *m = &p->maps[i];

		if (m->path[0] != '/' || !(m->prot & SC_PROT_X) || seen(ar, m->path))
			continue;
		if (kept_elf_deleted(m->path)) {
			ret = add_kept(ar, m);
		} else if (!build_id_matches(m)) {
			warnx_("%s: build-id differs from the recorded one, left out", m->path);
			ar->changed++;
			continue;
		} else {
			ret = add_path(ar, m->path);
			if (!ret)
				ret = add_debug_file(ar, m->path);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * @s escaped for a sed s command of tar's --transform (basic regex, \001
 * as the delimiter): in the regex (@re) . [ ] * ^ $ and \, in the
 * replacement & and \
 */
static char *transform_escape(const char *s, bool re)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;

	for (; out && *s; s++) {
		if (strchr(re ? ".[]*^$\\" : "&\\", *s))
			*o++ = '\\';
		*o++ = *s;
	}
	if (out)
		*o = 0;
	return out;
}

/* --transform renaming a kept copy to its mapped path (names relative to /) */
static char *transform_arg(const struct apath *p)
{
	char *re = transform_escape(p->path + 1, true);
	char *rep = transform_escape(p->as + 1, false);
	char *arg = NULL;

	if (re && rep && asprintf(&arg, "--transform=s\001^%s$\001%s\001", re, rep) < 0)
		arg = NULL;
	free(re);
	free(rep);
	return arg;
}

/*
 * tar -czhf OUT -C / --no-recursion [--transform=...] --null -T - (names
 * relative to /, NUL-separated)
 */
static int spawn_tar(struct archive *ar, const char *out, int in, pid_t *pid)
{
	static const char *const head[] = { "tar", "-czhf", NULL, "-C", "/", "--no-recursion" };
	static const char *const tail[] = { "--null", "-T", "-", NULL };
	size_t n = ARRAY_SIZE(head), i;
	posix_spawn_file_actions_t fa;
	const struct apath *p;
	char **argv;
	int err = 0;

	argv = calloc(ARRAY_SIZE(head) + ar->nr + ARRAY_SIZE(tail), sizeof(*argv));
	if (!argv)
		return ENOMEM;
	memcpy(argv, head, sizeof(head));
	argv[2] = (char *)out;
	for (p = ar->all; p && !err; p = p->next)
		if (p->as && !(argv[n++] = transform_arg(p)))
			err = ENOMEM;
	memcpy(argv + n, tail, sizeof(tail));
	if (!err) {
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, in, 0);
		err = posix_spawnp(pid, "tar", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	for (i = ARRAY_SIZE(head); i < n; i++)
		free(argv[i]);
	free(argv);
	return err;
}

static int run_tar(struct archive *ar, const char *out)
{
	int pfd[2], status = 0, err;
	const struct apath *p;
	pid_t pid;
	FILE *w;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	err = spawn_tar(ar, out, pfd[0], &pid);
	close(pfd[0]);
	if (err) {
		close(pfd[1]);
		return -err;
	}
	signal(SIGPIPE, SIG_IGN);
	w = fdopen(pfd[1], "w");
	for (p = ar->all; w && p; p = p->next)
		fprintf(w, "%s%c", p->path + 1, 0);
	if (w)
		fclose(w);
	else
		close(pfd[1]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -EIO;
	return 0;
}

static int archive_write(struct archive *ar, const char *out)
{
	int ret = run_tar(ar, out);

	if (ret) {
		warnx_("%s: tar failed", out);
		return ret;
	}
	printf("%s: %u files%s\n", out, ar->nr,
	       ar->changed ? " (some changed since the recording were left out)" : "");
	return 0;
}

int cmd_archive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct archive ar = { .sink = { .proc = on_proc } };
	const char *in = "stallcap.data";
	char *out = NULL;
	struct apath *p, *n;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			free(out);
			out = strdup(optarg);
			break;
		case 'h':
			fputs(archive_help, stdout);
			return 0;
		default:
			fputs(archive_help, stderr);
			return 2;
		}
	}
	if (optind < argc)
		in = argv[optind++];
	if (optind < argc) {
		warnx_("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!out && asprintf(&out, "%s.tar.gz", in) < 0)
		return 1;
	htab_init(&ar.seen);
	ret = scfile_read(in, &ar.sink);
	if (ret)
		warnx_("%s: %s", in, ret == -EPROTO ? "not a stallcap record file" :
		       strerror(-ret));
	else if (!ar.nr)
		warnx_("%s: no mapped file to archive", in);
	else
		ret = archive_write(&ar, out);
	for (p = ar.all; p; p = n) {
		n = p->next;
		free(p->as);
		free(p);
	}
	htab_free(&ar.seen);
	free(out);
	return ret || !ar.nr ? 1 : 0;
}
