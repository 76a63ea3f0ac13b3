/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A large record file written by the tool's own writer (record_file.c):
 * @n stalls of 500 threads of one process, 50 distinct kernel stacks (4
 * frames over 20 symbols).  Stall i: deadline at 1 s + 10 ms * i, two samples
 * at T and 2T (T = 1 ms), and its end at (2 + i % 10) ms after the deadline:
 * the stalls of a file last 6.5 ms each on average.  Used by scale_test.c
 * and by gen_stalls (bench/run.sh).
 */
#ifndef STALLCAP_TESTS_SCALE_GEN_H
#define STALLCAP_TESTS_SCALE_GEN_H

#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#include "helpers.h"

#define GEN_KBASE	0xffffffff81000000ULL
#define GEN_NR_STACKS	50

static inline int gen_stalls(const char *path, unsigned int n)
{
	struct sc_host_info hi = { .release = "6.12.0-gen", .boot_id = "gen-boot" };
	struct scfile *f = scfile_create(path);
	struct stallcap_stall_end e;
	struct stallcap_sample *s;
	struct rec_spec sp;
	struct sc_sink *sk;
	char name[32];
	unsigned int i, j, v;
	__u64 kips[4], d;
	int ret = 0;

	if (!f)
		return -errno;
	sk = scfile_sink(f);
	ret |= sk->info(sk, &hi);
	for (i = 0; i < 20; i++) {
		struct ksym k = { .addr = GEN_KBASE + i * 0x1000, .size = 0x1000, .name = name };

		snprintf(name, sizeof(name), "gen_kfunc_%u", i);
		ret |= sk->ksym(sk, &k);
	}
	for (i = 0; i < n && !ret; i++) {
		v = i % GEN_NR_STACKS;
		for (j = 0; j < 4; j++)	/* stack v: distinct for v < 50 */
			kips[j] = GEN_KBASE + ((v / (j ? 5 * j : 1) + j) % 20) * 0x1000 + 0x10 + v;
		d = NSEC_PER_SEC + (__u64)i * 10 * NSEC_PER_MSEC;
		memset(&sp, 0, sizeof(sp));
		sp.stall_id = i / 500 + 1;
		sp.pid = 100;
		sp.tid = 1000 + i % 500;
		sp.deadline_ns = d;
		sp.timeout_ns = NSEC_PER_MSEC;
		sp.kips = kips;
		sp.nk = 4;
		sp.comm = "gen-worker";
		for (j = 0; j < 2 && !ret; j++) {
			sp.sample_index = j;
			sp.capture_ns = d + (j + 1) * NSEC_PER_MSEC;
			s = make_sample(&sp);
			ret |= sk->record(sk, &s->hdr);
			free(s);
		}
		e = make_end(sp.stall_id, 100, sp.tid, d, d + (2 + i % 10) * NSEC_PER_MSEC, 2);
		ret |= sk->record(sk, &e.hdr);
	}
	ret |= scfile_close(f);
	return ret ? -EIO : 0;
}

struct run {
	double cpu_s, wall_s;
	long maxrss_kb;
	int status;
};

/* run `TOOL report MODE -o OUT FILE`, measured */
static inline int run_report(const char *tool, const char *file, const char *mode,
			     const char *out, struct run *r)
{
	struct timespec t0, t1;
	struct rusage ru;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		execl(tool, tool, "report", mode, "-o", out, file, (char *)NULL);
		_exit(127);
	}
	if (wait4(pid, &r->status, 0, &ru) != pid)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->cpu_s = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	r->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	r->maxrss_kb = ru.ru_maxrss;
	return 0;
}

#endif /* STALLCAP_TESTS_SCALE_GEN_H */
