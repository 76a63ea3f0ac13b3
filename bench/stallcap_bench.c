// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap_bench: hot-path cost, detection lateness, capture cost, scale,
 * stallcap against Seastar's stall detector, heartbeat watches at scale and
 * the time spent in NMI context per capture, each next to a baseline
 * measured in the same run.
 *
 *   stallcap_bench [--smoke] [--scale-max N] [--remote-only] SECTION...
 *	SECTION: info hot lateness capture seastar scale beats nmi all
 *	(in a guest with the module loaded; prints "@bench KEY=VALUE" lines)
 *   stallcap_bench report RAW OUT
 *	(anywhere) turn the @bench lines of RAW into OUT.md and OUT.json,
 *	and print the Markdown
 *
 * Each section runs in a child process: a section's pinning, signals or
 * threads never leak into the next, and a crash is reported as such.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

struct bench_opts bench_opts = { .scale_max = 10000 };

static int bench_info(void)
{
	char buf[128] = "";
	struct utsname u;
	struct sc s;
	FILE *f;
	int ret;

	if (!uname(&u))
		out_str(u.release, "info.kernel");
	out_num(nr_cpus(), "info.cpus");
	f = fopen("/proc/meminfo", "r");
	if (f) {
		long long kb;

		if (fscanf(f, "MemTotal: %lld", &kb) == 1)
			out_num((double)kb / 1024, "info.mem_mib");
		fclose(f);
	}
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			out_str(strtok(buf, "\n"), "info.clocksource");
		fclose(f);
	}
	ret = sc_open(&s, 0, 1, 4);
	if (ret) {
		out_str(strerror(-ret), "info.stallcap_error");
		return ret;
	}
	out_num(s.info.abi_version, "info.abi_version");
	out_str(s.info.features & STALLCAP_FEAT_NMI ? "nmi" : "ipi", "info.capture");
	out_num(!!(s.info.features & STALLCAP_FEAT_HEARTBEAT), "info.feat_heartbeat");
	out_num((double)s.info.min_deadline_ns, "info.min_deadline_ns");
	out_num(s.info.max_watches_per_user, "info.max_watches_per_user");
	out_num(bench_opts.smoke, "info.smoke");
	sc_close(&s);
	return 0;
}

static const struct section {
	const char *name;
	int (*fn)(void);
} sections[] = {
	{ "info",	bench_info },
	{ "hot",	bench_hotpath },
	{ "lateness",	bench_lateness },
	{ "capture",	bench_capture },
	{ "seastar",	bench_seastar },
	{ "scale",	bench_scale },
	{ "beats",	bench_beats },
	/* last: its rounds that copy in the NMI handler raise the kernel's
	 * "took too long" mark for the rest of the boot */
	{ "nmi",	bench_nmi_time },
};

#define NR_SECTIONS	(sizeof(sections) / sizeof(sections[0]))

static int run_section(const struct section *sec)
{
	uint64_t t0 = now_ns();
	int status, rc;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		rc = sec->fn();
		if (rc)
			note("%s: %s", sec->name, strerror(rc < 0 ? -rc : rc));
		fflush(stdout);
		_exit(rc ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	out_num(rc, "section.%s.rc", sec->name);
	out_num((double)(now_ns() - t0) / NS_PER_SEC, "section.%s.seconds", sec->name);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stallcap_bench [--smoke] [--scale-max N] [--remote-only] SECTION...\n"
		"       SECTION: info hot lateness capture seastar scale beats nmi all\n"
		"       stallcap_bench report RAW OUT   (writes OUT.md, OUT.json)\n");
}

int main(int argc, char **argv)
{
	unsigned int i, ran = 0, matched;
	int a, rc = 0;

	if (argc == 4 && !strcmp(argv[1], "report"))
		return bench_report(argv[2], argv[3]) ? 1 : 0;
	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];
		bool all = !strcmp(arg, "all");

		if (!strcmp(arg, "--smoke")) {
			bench_opts.smoke = true;
			if (bench_opts.scale_max > 100)
				bench_opts.scale_max = 100;
			continue;
		}
		if (!strcmp(arg, "--remote-only")) {
			bench_opts.remote_only = true;
			continue;
		}
		if (!strcmp(arg, "--scale-max") && a + 1 < argc) {
			bench_opts.scale_max = (unsigned int)strtoul(argv[++a], NULL, 0);
			continue;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			return 0;
		}
		for (i = 0, matched = 0; i < NR_SECTIONS; i++) {
			if (!all && strcmp(arg, sections[i].name))
				continue;
			if (run_section(&sections[i]))
				rc = 1;
			matched++;
		}
		if (!matched) {
			usage(stderr);
			return 2;
		}
		ran += matched;
	}
	if (!ran) {
		usage(stderr);
		return 2;
	}
	return rc;
}
