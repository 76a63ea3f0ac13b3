// SPDX-License-Identifier: GPL-2.0
/*
 * Seed corpora of the fuzz targets, written by the tool's own writer
 * (scfile_create() and its sink) and laid out as the module lays out its
 * ring, plus the large inputs that once took quadratic time or memory.
 *
 *   gen_corpus DIR     writes DIR/report/ (record files), DIR/ring/ (ring
 *                      images, see fuzz_ring.h) and DIR/slow/ (large record
 *                      files, run once each under a time and memory limit)
 */
#include <stdint.h>
#include <sys/stat.h>

#include "helpers.h"
#include "fuzz_ring.h"
#include "record_file.h"

#define D	1000000000ULL
#define KBASE	0xffffffff81000000ULL

static const char *dir;

int main(int argc, char **argv);

static struct scfile *open_file(const char *sub, const char *name)
{
	char path[512];
	struct scfile *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = scfile_create(path);
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

static void close_file(struct scfile *f)
{
	if (scfile_close(f)) {
		fprintf(stderr, "gen_corpus: write error\n");
		exit(1);
	}
}

static void put_rec(struct sc_sink *sk, const void *rec)
{
	sk->record(sk, rec);
}

/* A sample of this very process: its registers and stack are plausible. */
static void put_sample(struct sc_sink *sk, const struct rec_spec *sp)
{
	struct stallcap_sample *s = make_sample(sp);

	put_rec(sk, s);
	free(s);
}

static void put_proc_self(struct sc_sink *sk, __u32 as_pid)
{
	struct sc_proc *p;

	if (procmaps_snapshot((__u32)getpid(), NULL, &p))
		return;
	p->pid = as_pid;
	sk->proc(sk, p);
	sc_proc_free(p);
}

static void put_ksyms(struct sc_sink *sk)
{
	struct ksym k = { .addr = KBASE, .size = 0x100, .name = "do_sys_poll" };

	sk->ksym(sk, &k);
	k.addr = KBASE + 0x1000;
	k.name = "entry_SYSCALL_64";
	sk->ksym(sk, &k);
	k.addr = KBASE + 0x2000;
	k.size = 0;
	k.name = "stallcap_timer";
	k.mod = "stallcap";
	sk->ksym(sk, &k);
}

/* Two samples with kernel, user frames and a raw stack, then the end. */
static void gen_basic(void)
{
	struct scfile *f = open_file("report", "basic.data");
	struct sc_sink *sk = scfile_sink(f);
	__u64 kips[3] = { KBASE + 0x10, KBASE + 0x1020, KBASE + 0x2004 };
	__u64 uips[3], stack[64];
	struct stallcap_regs_x86_64 regs = { .sp = (__u64)(uintptr_t)stack,
					   .ip = (__u64)(uintptr_t)gen_basic,
					   .bp = (__u64)(uintptr_t)stack };
	struct rec_spec sp = {
		.stall_id = 1, .pid = 100, .tid = 101, .cpu = 1, .comm = "worker",
		.timeout_ns = 20 * NSEC_PER_MSEC, .deadline_ns = D, .capture_ns = D + 5000,
		.kips = kips, .nk = 3, .uips = uips, .nu = 3, .regs = &regs,
		.stack = stack, .stack_size = sizeof(stack), .stack_start = regs.sp,
		.flags = STALLCAP_SAMPLE_USER_MODE,
	};
	struct stallcap_stall_end e = make_end(1, 100, 101, D, D + 30 * NSEC_PER_MSEC, 2);
	unsigned int i;
	void *img;
	size_t len;

	/* a plausible stack: frame pointers into itself and return addresses */
	for (i = 0; i < 64; i += 2) {
		stack[i] = (__u64)(uintptr_t)&stack[i + 2];
		stack[i + 1] = (__u64)(uintptr_t)main + i;
	}
	uips[0] = (__u64)(uintptr_t)gen_basic;
	uips[1] = (__u64)(uintptr_t)__builtin_return_address(0);
	uips[2] = (__u64)(uintptr_t)main;
	struct sc_host_info hi = { .release = "6.12.0-fuzz",
				   .boot_id = "00000000-0000-0000-0000-000000000000",
				   .realtime_offset_ns = 1700000000LL * 1000000000LL };

	sk->info(sk, &hi);
	if (!vdso_image(&img, &len)) {
		sk->vdso(sk, img, len);
		free(img);
	}
	put_proc_self(sk, 100);
	put_ksyms(sk);
	put_sample(sk, &sp);
	sp.sample_index = 1;
	sp.capture_ns = D + 20 * NSEC_PER_MSEC;
	put_sample(sk, &sp);
	/* asleep in read() of a pipe, its descriptor named by record */
	sp.sample_index = 2;
	sp.capture_ns = D + 25 * NSEC_PER_MSEC;
	sp.state = STALLCAP_STATE_SLEEPING;
	sp.flags = 0;
	sp.sys = &(struct stallcap_sec_syscall){ .nr = 0, .args = { 5, regs.sp, 4096 } };
	sk->fdname(sk, &(struct sc_fdname){ .pid = 100, .tid = 101, .stall_id = 1,
					    .sample_index = 2, .fd = 5, .name = "pipe:[4242]" });
	put_sample(sk, &sp);
	sp.sys = NULL;
	/* a user-mode copy that ended at a gap, with the runs above it */
	sp.sample_index = 3;
	sp.capture_ns = D + 28 * NSEC_PER_MSEC;
	sp.state = STALLCAP_STATE_RUNNING;
	sp.flags = STALLCAP_SAMPLE_USER_MODE | STALLCAP_SAMPLE_COPY_PARTIAL;
	sp.stack_size = 128;
	sp.more = &stack[16];
	sp.more_size = 256;
	sp.more_start = regs.sp + 8192;
	sp.nr_more = 2;
	put_sample(sk, &sp);
	put_rec(sk, &e);
	sk->lost(sk, 3, 1);
	close_file(f);
}

/* Blocked samples completed by a deferred USER_STACK record (cookie 7). */
static void gen_deferred(void)
{
	struct scfile *f = open_file("report", "deferred.data");
	struct sc_sink *sk = scfile_sink(f);
	__u64 kips[2] = { KBASE + 0x10, KBASE + 0x1020 };
	__u64 uips[2] = { 0x401000, 0x401100 };
	struct rec_spec sp = {
		.stall_id = 2, .pid = 200, .tid = 201, .comm = "blocked",
		.timeout_ns = 10 * NSEC_PER_MSEC, .deadline_ns = D, .capture_ns = D + 1000,
		.kips = kips, .nk = 2, .cookie = 7, .state = STALLCAP_STATE_UNINTERRUPTIBLE,
		.flags = STALLCAP_SAMPLE_USTACK_REMOTE | STALLCAP_SAMPLE_DEFER_PENDING,
	};
	struct stallcap_stall_end e = make_end(2, 200, 201, D, D + 50 * NSEC_PER_MSEC, 3);

	put_ksyms(sk);
	put_sample(sk, &sp);
	sp.sample_index = 1;
	put_sample(sk, &sp);
	put_rec(sk, &e);
	sp.type = STALLCAP_REC_USER_STACK;
	sp.nk = 0;
	sp.uips = uips;
	sp.nu = 2;
	sp.flags = 0;
	put_sample(sk, &sp);
	sp.type = STALLCAP_REC_SAMPLE;	/* a third, after its user stack */
	sp.sample_index = 2;
	sp.nk = 2;
	sp.nu = 0;
	sp.flags = STALLCAP_SAMPLE_DEFER_PENDING;
	put_sample(sk, &sp);
	close_file(f);
}

/* Names that try to act on a terminal, forge lines, or break JSON/folded. */
static const char *const hostile[] = {
	"\x1b]0;owned\x07", "a\nstall 9 of tid 1 (x)", "cr\rover", "semi;colon 99",
	"bad\xff\xfe" "utf8", "\xc0\xaf" "overlong", "\xed\xa0\x80" "surrogate", "c1\xc2\x9b" "31m",
	"bidi\xe2\x80\xae" "evil", "back\\slash", "tab\tquote\"",
};

static void gen_hostile(void)
{
	struct scfile *f = open_file("report", "hostile_names.data");
	struct sc_sink *sk = scfile_sink(f);
	struct sc_map maps[ARRAY_SIZE(hostile)];
	struct sc_proc p = { .pid = 300, .nr_maps = ARRAY_SIZE(hostile), .maps = maps };
	__u64 kips[ARRAY_SIZE(hostile)], uips[ARRAY_SIZE(hostile)];
	struct ksym k = { .size = 0x100 };
	struct rec_spec sp = {
		.stall_id = 3, .pid = 300, .tid = 301, .comm = "\x1b[2J\x07\r\n\xff\xfe" ";x y",
		.timeout_ns = NSEC_PER_MSEC, .deadline_ns = D, .capture_ns = D + 1,
		.kips = kips, .nk = ARRAY_SIZE(hostile), .uips = uips,
		.nu = ARRAY_SIZE(hostile),
	};
	char path[ARRAY_SIZE(hostile)][64];
	unsigned int i;

	snprintf(p.comm, sizeof(p.comm), "%s", "\x1b[31mred\n");
	for (i = 0; i < ARRAY_SIZE(hostile); i++) {
		k.addr = KBASE + 0x1000 * i;
		k.name = hostile[i];
		k.mod = i % 2 ? hostile[(i + 1) % ARRAY_SIZE(hostile)] : NULL;
		sk->ksym(sk, &k);
		kips[i] = k.addr + 8;
		snprintf(path[i], sizeof(path[i]), "/nonexistent/%s", hostile[i]);
		memset(&maps[i], 0, sizeof(maps[i]));
		maps[i].start = 0x400000 + 0x1000 * i;
		maps[i].end = maps[i].start + 0x1000;
		maps[i].prot = SC_PROT_R | SC_PROT_X;
		maps[i].path = path[i];
		uips[i] = maps[i].start + 0x10;
	}
	sk->proc(sk, &p);
	put_sample(sk, &sp);
	close_file(f);
}

/* Length-0 corners: an empty vDSO, a stall end without samples. */
static void gen_empty(void)
{
	struct scfile *f = open_file("report", "empty_parts.data");
	struct sc_sink *sk = scfile_sink(f);
	struct stallcap_stall_end e = make_end(4, 400, 401, D, D + 1, 0);
	struct sc_proc p = { .pid = 400 };

	sk->vdso(sk, "", 0);
	sk->proc(sk, &p);
	put_rec(sk, &e);
	close_file(f);
}

/* ---- ring images ---- */

struct ring_img {
	struct fuzz_ring_hdr h;
	unsigned char data[8192];
	size_t used;
};

static void ring_put(struct ring_img *r, const void *rec)
{
	const struct stallcap_rec_header *h = rec;

	if (r->used + h->size <= sizeof(r->data)) {
		memcpy(r->data + r->used, rec, h->size);
		r->used += h->size;
	}
}

static void ring_write(const struct ring_img *r, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ring/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(&r->h, sizeof(r->h), 1, f) != 1 ||
	    fwrite(r->data, r->used, 1, f) != 1 || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void gen_rings(void)
{
	__u64 kips[2] = { KBASE + 0x10, KBASE + 0x1020 }, uips[1] = { 0x401000 };
	struct rec_spec sp = { .stall_id = 5, .pid = 500, .tid = 501, .kips = kips, .nk = 2,
			       .uips = uips, .nu = 1, .cookie = 9,
			       .flags = STALLCAP_SAMPLE_DEFER_PENDING };
	struct stallcap_stall_end e = make_end(5, 500, 501, D, D + 10, 1);
	__u64 pad[2] = { 0 };	/* a 16-byte PAD record */
	struct stallcap_sample *s = make_sample(&sp);
	static struct ring_img r;

	((struct stallcap_rec_header *)pad)->size = 16;
	((struct stallcap_rec_header *)pad)->type = STALLCAP_REC_PAD;
	memset(&r, 0, sizeof(r));
	r.h.log2_size = 13;	/* 8 KiB */
	ring_put(&r, s);
	ring_put(&r, pad);
	ring_put(&r, &e);
	free(s);
	sp.type = STALLCAP_REC_USER_STACK;
	sp.nk = 0;
	s = make_sample(&sp);
	ring_put(&r, s);
	free(s);
	r.h.data_head = r.used;
	ring_write(&r, "records.ring");
	r.h.flags = FUZZ_RING_STOP_EARLY;
	r.h.reads = 7;
	ring_write(&r, "stop_early.ring");
	/* the same records past a wrap: positions beyond the first lap */
	r.h.flags = 0;
	r.h.data_tail = 3 * 8192;
	r.h.data_head = r.h.data_tail + r.used;
	ring_write(&r, "lapped.ring");
}

/* ---- large inputs that were quadratic ---- */

/* 200,000 stall ends of distinct stalls: 1.3 ms with a hash, minutes before. */
static void gen_many_ends(void)
{
	struct scfile *f = open_file("slow", "many_stall_ends.data");
	struct sc_sink *sk = scfile_sink(f);
	struct stallcap_stall_end e;
	unsigned int i;

	for (i = 0; i < 200000; i++) {
		e = make_end(i, 600, 601 + i % 7, D, D + i, 1);
		put_rec(sk, &e);
	}
	close_file(f);
}

/* One stall of 40,000 samples, all one stack, all sharing one cookie. */
static void gen_many_samples(void)
{
	struct scfile *f = open_file("slow", "many_samples.data");
	struct sc_sink *sk = scfile_sink(f);
	__u64 kips[16];
	struct rec_spec sp = { .stall_id = 7, .pid = 700, .tid = 701, .kips = kips,
			       .nk = 16, .cookie = 3, .deadline_ns = D,
			       .flags = STALLCAP_SAMPLE_DEFER_PENDING };
	struct stallcap_sample *s;
	unsigned int i;

	for (i = 0; i < 16; i++)
		kips[i] = KBASE + 0x100 * i;
	s = make_sample(&sp);
	for (i = 0; i < 40000; i++) {
		s->sample_index = i;
		s->capture_ns = D + i;
		s->hdr.type = i % 1000 == 999 ? STALLCAP_REC_USER_STACK : STALLCAP_REC_SAMPLE;
		put_rec(sk, s);
	}
	free(s);
	close_file(f);
}

/* One process, 200 snapshots of 500 executable maps each, then a sample. */
static void gen_many_maps(void)
{
	struct scfile *f = open_file("slow", "many_maps.data");
	struct sc_sink *sk = scfile_sink(f);
	static struct sc_map maps[500];
	static char paths[500][32];
	struct sc_proc p = { .pid = 800, .nr_maps = 500, .maps = maps };
	__u64 uips[1] = { 0x10000010 };
	struct rec_spec sp = { .stall_id = 8, .pid = 800, .tid = 800, .uips = uips, .nu = 1 };
	unsigned int i, j;

	for (j = 0; j < 200; j++) {
		for (i = 0; i < 500; i++) {
			snprintf(paths[i], sizeof(paths[i]), "/nonexistent/lib%u-%u.so", j, i);
			memset(&maps[i], 0, sizeof(maps[i]));
			maps[i].start = 0x10000000ULL + 0x10000ULL * (i + 500ULL * j);
			maps[i].end = maps[i].start + 0x1000;
			maps[i].prot = SC_PROT_R | SC_PROT_X;
			maps[i].path = paths[i];
		}
		sk->proc(sk, &p);
	}
	put_sample(sk, &sp);
	close_file(f);
}

/* 2,000 snapshots of 100 maps, then 2,000 samples of 64 user frames: lookups. */
static void gen_many_lookups(void)
{
	struct scfile *f = open_file("slow", "many_lookups.data");
	struct sc_sink *sk = scfile_sink(f);
	static struct sc_map maps[100];
	struct sc_proc p = { .pid = 900, .nr_maps = 100, .maps = maps };
	__u64 uips[64];
	struct rec_spec sp = { .stall_id = 9, .pid = 900, .tid = 900, .uips = uips, .nu = 64 };
	unsigned int i, j;

	for (j = 0; j < 2000; j++) {
		for (i = 0; i < 100; i++) {
			memset(&maps[i], 0, sizeof(maps[i]));
			maps[i].start = 0x10000000ULL + 0x10000ULL * (i + 100ULL * j);
			maps[i].end = maps[i].start + 0x1000;
			maps[i].prot = SC_PROT_R | SC_PROT_X;
			maps[i].path = "";	/* anonymous: no file to open */
		}
		sk->proc(sk, &p);
	}
	for (i = 0; i < 64; i++)	/* in the oldest snapshot: every lookup walks them all */
		uips[i] = 0x10000000ULL + 0x10000ULL * i + 0x10;
	for (j = 0; j < 2000; j++) {
		sp.sample_index = j;
		put_sample(sk, &sp);
	}
	close_file(f);
}

int main(int argc, char **argv)
{
	static const char *const subs[] = { "report", "ring", "slow" };
	char path[512];
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);
	for (i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, subs[i]);
		mkdir(path, 0755);
	}
	gen_basic();
	gen_deferred();
	gen_hostile();
	gen_empty();
	gen_rings();
	gen_many_ends();
	gen_many_samples();
	gen_many_maps();
	gen_many_lookups();
	return 0;
}
