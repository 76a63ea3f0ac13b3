// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap stats: the module's or a session's counters (STALLCAP_IOC_GET_STATS)
 * and what the module supports (STALLCAP_IOC_GET_INFO).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "output.h"

static const char stats_help[] =
"usage: stallcap stats [--fd N] [--global] [--json | --prometheus [-i FILE]]\n\n"
"Print the module's counters, or with --fd those of the application's\n"
"session N (--global as well: the module's again).\n\n"
"  -F, --fd N      the session to read\n"
"  -g, --global    module-wide counters (the default without --fd)\n"
"  -j, --json      one JSON object\n"
"  -P, --prometheus  the Prometheus text format (counters as stallcap_*_total)\n"
"  -i, --input FILE  with --prometheus: also per-process stall counts and\n"
"                  duration histograms of the record file FILE (then the\n"
"                  module's counters only if it is loaded)\n"
"  -h, --help      this text\n";

static const struct option stats_options[] = {
	{ "fd", required_argument, NULL, 'F' },
	{ "global", no_argument, NULL, 'g' },
	{ "json", no_argument, NULL, 'j' },
	{ "prometheus", no_argument, NULL, 'P' },
	{ "input", required_argument, NULL, 'i' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

#define COUNTER(f)	{ #f, offsetof(struct stallcap_stats, f) }

static const struct { const char *name; size_t off; } counters[] = {
	COUNTER(watches), COUNTER(armed), COUNTER(stalls), COUNTER(samples),
	COUNTER(stall_ends), COUNTER(deferred), COUNTER(lost), COUNTER(suppressed),
	COUNTER(capture_local), COUNTER(capture_nmi), COUNTER(capture_ipi),
	COUNTER(capture_blocked), COUNTER(migrate_retries), COUNTER(lost_first),
	COUNTER(lost_deferred), COUNTER(attached), COUNTER(locked_bytes),
	COUNTER(locked_rlimit_bytes),
};

static const char *const feature_names[] = {
	"nmi", "heartbeat", "cputime", "defer_user", "global", "kaddr",
	"shared_deadline", "attach", "times", "why", "kernel_locks",
	"attach_inherit", "attach_park", "throttle", "memstall", "signal_stack",
	"user_stack_more", "deadline_tsc", "watch_busy", "attach_recv",
	"recv_pipe", "syscall", "recv_tty", "wait_devices", "wait_splice",
};

/* The features of @in by name; a bit this tool does not know as "bitN". */
static void print_features(const struct stallcap_info *in, const char *sep0,
			   const char *sep, const char *quote)
{
	unsigned int i, n = 0;

	for (i = 0; i < 64; i++) {
		if (!(in->features & (1ULL << i)))
			continue;
		if (i < ARRAY_SIZE(feature_names))
			printf("%s%s%s%s", n++ ? sep : sep0, quote, feature_names[i], quote);
		else
			printf("%s%sbit%u%s", n++ ? sep : sep0, quote, i, quote);
	}
}

static __u64 counter(const struct stallcap_stats *st, unsigned int i)
{
	return *(const __u64 *)((const char *)st + counters[i].off);
}

static void hist_json(const char *name, const __u64 *h)
{
	int i;

	printf(",\"%s\":[", name);
	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)h[i]);
	putchar(']');
}

static void print_json(const struct stallcap_info *in, const struct stallcap_stats *st,
		       bool global)
{
	unsigned int i;

	printf("{\"abi_version\":%u,\"features\":[", in->abi_version);
	print_features(in, "", ",", "\"");
	printf("],\"psi\":%s,\"min_deadline_ns\":%llu,\"max_ring_bytes\":%u,\"max_watches_per_user\":%u,"
	       "\"arch\":\"%s\",\"sample_fixed_size\":%u,\"mlock_bytes\":%llu,"
	       "\"mlock_used_bytes\":%llu,\"scope\":\"%s\"",
	       psi_on() ? "true" : "false",
	       (unsigned long long)in->min_deadline_ns, in->max_ring_bytes,
	       in->max_watches_per_user, sc_arch_name(in->arch), in->sample_fixed_size,
	       (unsigned long long)in->mlock_bytes, (unsigned long long)in->mlock_used_bytes,
	       global ? "global" : "session");
	for (i = 0; i < ARRAY_SIZE(counters); i++)
		printf(",\"%s\":%llu", counters[i].name, (unsigned long long)counter(st, i));
	hist_json("capture_cost_hist", st->capture_cost_hist);
	hist_json("lateness_hist", st->lateness_hist);
	puts("}");
}

static void bucket(char *buf, size_t len, int i)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	unsigned long long lo = i ? 1ULL << i : 0;
	int u = 0;

	while (lo >= 1000 && u < 3) {
		lo /= 1000;
		u++;
	}
	snprintf(buf, len, "%s%llu %s", i == STALLCAP_HIST_BUCKETS - 1 ? ">= " : "", lo, unit[u]);
}

static void print_text(const struct stallcap_info *in, const struct stallcap_stats *st,
		       bool global)
{
	char b[32];
	unsigned int i;
	int k;

	printf("module: ABI %u, features:", in->abi_version);
	print_features(in, " ", " ", "");
	if ((in->features & STALLCAP_FEAT_MEMSTALL) && !psi_on())
		printf("\n  memory stalls not marked: the kernel's pressure stall information is off "
		       "(psi=0 or CONFIG_PSI_DEFAULT_DISABLED; boot with psi=1)");
	printf("\n  min deadline %llu us, max ring %u KiB, %u watches per user, %s registers\n",
	       (unsigned long long)(in->min_deadline_ns / 1000), in->max_ring_bytes / 1024,
	       in->max_watches_per_user, sc_arch_name(in->arch));
	printf("  locked memory allowance %llu KiB per user (mlock_kb), %llu KiB used by this user\n",
	       (unsigned long long)(in->mlock_bytes / 1024),
	       (unsigned long long)(in->mlock_used_bytes / 1024));
	printf("counters (%s):\n", global ? "module-wide" : "this session");
	for (i = 0; i < ARRAY_SIZE(counters); i++)
		printf("  %-19s %llu\n", counters[i].name, (unsigned long long)counter(st, i));
	printf("histograms (from):   capture cost    lateness\n");
	for (k = 0; k < STALLCAP_HIST_BUCKETS; k++) {
		if (!st->capture_cost_hist[k] && !st->lateness_hist[k])
			continue;
		bucket(b, sizeof(b), k);
		printf("  %-16s %14llu %11llu\n", b, (unsigned long long)st->capture_cost_hist[k],
		       (unsigned long long)st->lateness_hist[k]);
	}
}

static void print_prometheus(const struct stallcap_stats *st, bool global)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(counters); i++)
		prom_counter(stdout, counters[i].name, counter(st, i), global);
}

int cmd_stats(int argc, char **argv)
{
	struct stallcap_session *s = NULL;
	struct stallcap_stats st;
	struct stallcap_info in;
	bool global = false, json = false, prom = false;
	const char *file = NULL;
	int opt, fd = -1, ret;
	char *end;

	while ((opt = getopt_long(argc, argv, "F:gjPi:h", stats_options, NULL)) != -1) {
		switch (opt) {
		case 'F':
			fd = (int)strtol(optarg, &end, 10);
			if (*end || fd < 0)
				goto usage;
			break;
		case 'g':
			global = true;
			break;
		case 'j':
			json = true;
			break;
		case 'P':
			prom = true;
			break;
		case 'i':
			file = optarg;
			break;
		case 'h':
			fputs(stats_help, stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc || (file && !prom) || (json && prom))
		goto usage;
	if (file && prom_file(stdout, file))
		return 1;
	global |= fd < 0;
	ret = fd >= 0 ? stallcap_session_adopt(&s, fd) : stallcap_session_open(&s, NULL, 0);
	if (ret && file && fd < 0)
		return 0;	/* the file's metrics alone: no module here */
	if (ret) {
		warn_open(ret);
		return 1;
	}
	ret = stallcap_session_get_info(s, &in);
	if (!ret)
		ret = stallcap_session_get_stats(s, &st, global ? STALLCAP_STATS_GLOBAL : 0);
	if (ret == -EPERM && global)
		warnx_("the module-wide counters need CAP_SYS_ADMIN");
	if (ret) {
		warnx_("cannot read the counters: %s", strerror(-ret));
	} else if (prom) {
		print_prometheus(&st, global);
	} else if (json) {
		print_json(&in, &st, global);
	} else {
		print_text(&in, &st, global);
	}
	stallcap_session_close(s);
	return ret ? 1 : 0;
usage:
	fputs(stats_help, stderr);
	return 2;
}
