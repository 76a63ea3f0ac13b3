// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap record: follow a session's records live and write them, with the
 * process maps, build-ids and kernel symbols they need, to a file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

static const char record_help[] =
"usage: stallcap record [-o FILE] [OPTIONS] [-- CMD [ARGS]]\n\n"
"Follow stall records live and write them to FILE (default stallcap.data,\n"
"'-' for stdout) until interrupted, the duration passes, or CMD exits.\n"
"An existing regular FILE is kept as FILE.old (and put back if recording\n"
"fails before anything was written); a device or FIFO is written to.\n\n"
"  -o, --output FILE    where to write\n"
COLLECT_HELP
"  -h, --help           this text\n";

static const struct option record_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	COLLECT_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* The exit code of a run: the command's, or 0 / 1. */
int exit_code(int ret, const struct collect_opts *o, int status)
{
	if (ret)
		return 1;
	if (!o->cmd)
		return 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* the file's sink, counting what goes through it for the closing line */
struct counting {
	struct sc_sink sink;	/* first */
	struct sc_sink *to;
	__u64 stalls, samples, lost, suppressed;
};

static int c_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	struct counting *c = (struct counting *)sk;

	if (rec->type == STALLCAP_REC_SAMPLE)
		c->samples++;
	else if (rec->type == STALLCAP_REC_STALL_END)
		c->stalls++;
	return c->to->record(c->to, rec);
}

static int c_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	return ((struct counting *)sk)->to->proc(((struct counting *)sk)->to, p);
}

static int c_ksym(struct sc_sink *sk, const struct ksym *k)
{
	return ((struct counting *)sk)->to->ksym(((struct counting *)sk)->to, k);
}

static int c_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	struct counting *c = (struct counting *)sk;

	c->lost = lost;
	c->suppressed = suppressed;
	return c->to->lost(c->to, lost, suppressed);
}

static int c_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	return ((struct counting *)sk)->to->vdso(((struct counting *)sk)->to, img, len);
}

static int c_info(struct sc_sink *sk, const struct sc_host_info *hi)
{
	return ((struct counting *)sk)->to->info(((struct counting *)sk)->to, hi);
}

static int c_fdname(struct sc_sink *sk, const struct sc_fdname *f)
{
	return ((struct counting *)sk)->to->fdname(((struct counting *)sk)->to, f);
}

static int c_flush(struct sc_sink *sk)
{
	struct sc_sink *to = ((struct counting *)sk)->to;

	return to->flush ? to->flush(to) : 0;
}

/* a file takes records as they come: nothing is due by time */
static bool c_timed(struct sc_sink *sk)
{
	return false;
}

/*
 * As perf: an existing FILE is kept as FILE.old before FILE is created, if
 * it is a regular file with something in it.  Anything else (a device such
 * as /dev/null, a FIFO, /dev/fd/N of a pipe) is written to as it is.
 */
static int keep_old(const char *out, char *old, size_t len)
{
	struct stat st;

	snprintf(old, len, "%s.old", out);
	if (stat(out, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	if (rename(out, old)) {
		warnx_("%s: cannot keep it as %s: %m; nothing recorded", out, old);
		return -errno;
	}
	return 1;
}

int cmd_record(int argc, char **argv)
{
	const char *out = "stallcap.data";
	struct counting cs = {
		.sink = { c_record, c_proc, c_ksym, c_lost, c_vdso, c_info, c_flush, NULL,
			  c_timed, c_fdname },
	};
	struct collect_opts o;
	struct scfile *f;
	char old[4096];
	int opt, ret, err, status, kept = 0;

	collect_opts_init(&o);
	while ((opt = getopt_long(argc, argv, "+o:h" COLLECT_SHORT_OPTIONS,
				  record_options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(record_help, stdout);
			return 0;
		default:
			if (collect_parse_opt(&o, opt, optarg)) {
				fputs(record_help, stderr);
				return 2;
			}
		}
	}
	if (optind < argc)
		o.cmd = argv + optind;
	if (collect_check(&o))
		return 2;
	if (strcmp(out, "-")) {
		kept = keep_old(out, old, sizeof(old));
		if (kept < 0)
			return 1;
	}
	f = scfile_create(out);
	if (!f) {
		warnx_("%s: cannot create: %m", out);
		if (kept > 0)
			rename(old, out);
		return 1;
	}
	cs.to = scfile_sink(f);
	ret = collect_run(&o, &cs.sink, &status);
	err = scfile_close(f);	/* the first write error, kept */
	if (err) {
		warnx_("%s: write error: %s", out, strerror(-err));
		ret = -1;
	}
	if (ret && kept > 0 && !cs.samples && !cs.stalls && !rename(old, out))
		kept = 0;	/* nothing recorded: the old FILE is FILE again */
	if (!ret)
		fprintf(stderr, "%s: %llu stall%s ended, %llu sample%s, %llu lost, %llu suppressed: "
			"%s\n", prog, (unsigned long long)cs.stalls, cs.stalls == 1 ? "" : "s",
			(unsigned long long)cs.samples, cs.samples == 1 ? "" : "s",
			(unsigned long long)cs.lost, (unsigned long long)cs.suppressed, out);
	return exit_code(ret, &o, status);
}
