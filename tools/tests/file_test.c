// SPDX-License-Identifier: GPL-2.0
/*
 * The record file: what the writer puts in comes back out of the reader, a
 * file cut short (still being written) reads up to the cut, foreign or
 * damaged files are refused.
 */
#include <sys/stat.h>

#include "helpers.h"
#include "record_file.h"
#include "kselftest_harness.h"
#include "usyms.h"

struct got {
	struct sc_sink sink;
	unsigned int records, procs, ksyms, lost_n, vdso_n, info_n;
	__u64 last_stall_id, lost, suppressed, pid_ns, reader_pid_ns, features;
	__u32 host_flags;
	__s64 rt_offset;
	unsigned char first_rec[1024];
	__u32 first_rec_size;
	__u32 proc_pid, nr_maps;
	char map_path[256], comm[16], ksym_name[64], ksym_mod[64], release[80], boot[40];
	__u8 build_id[SC_BUILD_ID_MAX];
	__u32 build_id_len;
	__u64 map_start, ksym_addr;
	__u32 ksym_size;
	size_t vdso_len;
};

static int g_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	struct got *g = (struct got *)sk;
	struct stallcap_sample_view v;

	if (!g->records++ && rec->size <= sizeof(g->first_rec)) {
		memcpy(g->first_rec, rec, rec->size);
		g->first_rec_size = rec->size;
	}
	if (!stallcap_sample_parse(rec, rec->size, &v))
		g->last_stall_id = v.s.stall_id;
	return 0;
}

static int g_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	struct got *g = (struct got *)sk;

	g->procs++;
	g->proc_pid = p->pid;
	g->nr_maps = p->nr_maps;
	memcpy(g->comm, p->comm, 16);
	snprintf(g->map_path, sizeof(g->map_path), "%s", p->maps[1].path);
	g->map_start = p->maps[1].start;
	g->build_id_len = p->maps[1].build_id_len;
	memcpy(g->build_id, p->maps[1].build_id, SC_BUILD_ID_MAX);
	return 0;
}

static int g_ksym(struct sc_sink *sk, const struct ksym *k)
{
	struct got *g = (struct got *)sk;

	g->ksyms++;
	g->ksym_addr = k->addr;
	g->ksym_size = k->size;
	snprintf(g->ksym_name, sizeof(g->ksym_name), "%s", k->name);
	snprintf(g->ksym_mod, sizeof(g->ksym_mod), "%s", k->mod ? k->mod : "(none)");
	return 0;
}

static int g_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	struct got *g = (struct got *)sk;

	g->lost_n++;
	g->lost = lost;
	g->suppressed = suppressed;
	return 0;
}

static int g_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	((struct got *)sk)->vdso_n++;
	((struct got *)sk)->vdso_len = len;
	return 0;
}

static int g_info(struct sc_sink *sk, const struct sc_host_info *hi)
{
	struct got *g = (struct got *)sk;

	g->info_n++;
	snprintf(g->release, sizeof(g->release), "%s", hi->release);
	snprintf(g->boot, sizeof(g->boot), "%s", hi->boot_id);
	g->rt_offset = hi->realtime_offset_ns;
	g->pid_ns = hi->pid_ns_inum;
	g->reader_pid_ns = hi->reader_pid_ns_inum;
	g->features = hi->module_features;
	g->host_flags = hi->host_flags;
	return 0;
}

FIXTURE(file)
{
	char path[64];
	struct got g;
};

FIXTURE_SETUP(file)
{
	snprintf(self->path, sizeof(self->path), "/tmp/stallcap-file-test.%d", getpid());
	memset(&self->g, 0, sizeof(self->g));
	self->g.sink = (struct sc_sink){ .record = g_record, .proc = g_proc, .ksym = g_ksym,
					 .lost = g_lost, .vdso = g_vdso, .info = g_info };
}

FIXTURE_TEARDOWN(file)
{
	unlink(self->path);
}

/*
 * A file with one chunk of each kind, around two records; the sample is a
 * newer module's (longer fixed part, unknown sections): kept as written.
 */
static struct stallcap_sample *written;

static void write_file(struct __test_metadata *_metadata, const char *path)
{
	static const __u64 kips[] = { 0xffffffff81000010 };
	struct rec_spec sp = { .stall_id = 5, .pid = 77, .tid = 78, .kips = kips, .nk = 1,
			       .fixed_tail = 16, .unknown_sec = 24 };
	struct sc_host_info hi = { .release = "6.1.0-test", .boot_id = "0123-boot",
				   .realtime_offset_ns = 1700000000000000000LL,
				   .pid_ns_inum = 4026531836ULL,
				   .reader_pid_ns_inum = 4026532000ULL,
				   .module_features = STALLCAP_FEAT_MEMSTALL | STALLCAP_FEAT_NMI,
				   .host_flags = SCF_HOST_KNOWN };
	struct stallcap_stall_end e = make_end(5, 77, 78, 10, 20, 1);
	struct sc_map maps[2] = {
		{ .start = 0x1000, .end = 0x2000, .prot = SC_PROT_R, .path = "" },
		{ .start = 0x400000, .end = 0x401000, .pgoff = 0x1000,
		  .prot = SC_PROT_R | SC_PROT_X, .build_id_len = 20,
		  .path = "/usr/bin/some-program with spaces" },
	};
	struct sc_proc p = { .pid = 77, .nr_maps = 2, .comm = "prog", .maps = maps };
	struct ksym k = { .addr = 0xffffffff81000000, .size = 0x40, .name = "do_sys_poll",
			  .mod = NULL };
	struct stallcap_sample *s = make_sample(&sp);
	struct scfile *f = scfile_create(path);
	struct sc_sink *sk;
	char vdso[8192] = { 0x7f, 'E', 'L', 'F' };

	ASSERT_NE(NULL, f);
	memset(maps[1].build_id, 0xab, 20);
	sk = scfile_sink(f);
	EXPECT_EQ(0, sk->info(sk, &hi));
	EXPECT_EQ(0, sk->vdso(sk, vdso, sizeof(vdso)));
	EXPECT_EQ(0, sk->proc(sk, &p));
	EXPECT_EQ(0, sk->ksym(sk, &k));
	k.addr = 0xffffffffc0001000;
	k.name = "stallcap_timer";
	k.mod = "stallcap";
	EXPECT_EQ(0, sk->ksym(sk, &k));
	EXPECT_EQ(0, sk->record(sk, &s->hdr));
	EXPECT_EQ(0, sk->record(sk, &e.hdr));
	EXPECT_EQ(0, sk->lost(sk, 3, 4));
	EXPECT_EQ(0, scfile_close(f));
	free(written);
	written = s;
}

TEST_F(file, round_trip)
{
	write_file(_metadata, self->path);
	ASSERT_EQ(0, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(2, self->g.records);
	EXPECT_EQ(5, self->g.last_stall_id);
	EXPECT_EQ(1, self->g.procs);
	EXPECT_EQ(77, self->g.proc_pid);
	EXPECT_EQ(2, self->g.nr_maps);
	EXPECT_STREQ("prog", self->g.comm);
	EXPECT_STREQ("/usr/bin/some-program with spaces", self->g.map_path);
	EXPECT_EQ(0x400000, self->g.map_start);
	EXPECT_EQ(20, self->g.build_id_len);
	EXPECT_EQ(0xab, self->g.build_id[19]);
	EXPECT_EQ(2, self->g.ksyms);
	EXPECT_EQ(0xffffffffc0001000, self->g.ksym_addr);
	EXPECT_EQ(0x40, self->g.ksym_size);
	EXPECT_STREQ("stallcap_timer", self->g.ksym_name);
	EXPECT_STREQ("stallcap", self->g.ksym_mod);
	EXPECT_EQ(1, self->g.lost_n);
	EXPECT_EQ(3, self->g.lost);
	EXPECT_EQ(4, self->g.suppressed);
	EXPECT_EQ(1, self->g.vdso_n);
	EXPECT_EQ(8192, self->g.vdso_len);
	EXPECT_STREQ("6.1.0-test", self->g.release);
	EXPECT_STREQ("0123-boot", self->g.boot);
	EXPECT_EQ(1700000000000000000LL, self->g.rt_offset);
	EXPECT_EQ(4026531836ULL, self->g.pid_ns);
	EXPECT_EQ(4026532000ULL, self->g.reader_pid_ns);
	EXPECT_EQ(STALLCAP_FEAT_MEMSTALL | STALLCAP_FEAT_NMI, self->g.features);
	EXPECT_EQ(SCF_HOST_KNOWN, self->g.host_flags);
	/* the record comes back byte for byte as the module wrote it */
	ASSERT_EQ(written->hdr.size, self->g.first_rec_size);
	EXPECT_EQ(0, memcmp(written, self->g.first_rec, written->hdr.size));
}

/* A file of the previous format (ABI 1 records) is refused, not misread. */
TEST_F(file, older_format_refused)
{
	struct scf_header h = { .magic = SCF_MAGIC, .version = 1, .header_size = sizeof(h) };
	FILE *f = fopen(self->path, "w");

	ASSERT_NE(NULL, f);
	fwrite(&h, sizeof(h), 1, f);
	fclose(f);
	EXPECT_EQ(-EPROTONOSUPPORT, scfile_read(self->path, &self->g.sink));
}

TEST_F(file, truncated_reads_up_to_the_cut)
{
	struct stat st;

	write_file(_metadata, self->path);
	ASSERT_EQ(0, stat(self->path, &st));
	/* cut inside the last chunk (the lost counters) */
	ASSERT_EQ(0, truncate(self->path, st.st_size - 8));
	ASSERT_EQ(0, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(2, self->g.records);
	EXPECT_EQ(0, self->g.lost_n);
}

/*
 * What record writes, report reads: a process of 140,000 mappings (a JVM's,
 * Elasticsearch's: a chunk of 22 MiB) and a kernel name of 299 bytes (a
 * Rust function's; KSYM_NAME_LEN is 512), then the lost counts after them.
 */
TEST_F(file, a_process_of_140000_mappings_and_a_long_kernel_name_read_back)
{
	static char name[] = "/var/lib/elasticsearch/nodes/0/indices/AbCdEfGhIjKlMnOpQrSt/0/"
			     "index/_segment_file_0000000000.cfs";
	struct sc_proc p = { .pid = 42, .nr_maps = 140000 };
	struct scfile *f = scfile_create(self->path);
	struct ksym k = { .addr = 0xffffffff81000000ULL, .size = 16 };
	char kname[300];
	struct sc_sink *sk;
	unsigned int i;

	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	p.maps = calloc(p.nr_maps, sizeof(*p.maps));
	ASSERT_NE(NULL, p.maps);
	for (i = 0; i < p.nr_maps; i++) {
		p.maps[i].start = 0x10000 + i * 0x2000ULL;
		p.maps[i].end = p.maps[i].start + 0x1000;
		p.maps[i].path = name;
	}
	memset(kname, 'r', sizeof(kname) - 1);
	kname[sizeof(kname) - 1] = 0;
	k.name = kname;
	EXPECT_EQ(0, sk->proc(sk, &p));
	EXPECT_EQ(0, sk->ksym(sk, &k));
	EXPECT_EQ(0, sk->lost(sk, 3, 4));
	EXPECT_EQ(0, scfile_close(f));
	free(p.maps);
	ASSERT_EQ(0, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(1, self->g.procs);
	EXPECT_EQ(140000, self->g.nr_maps);
	EXPECT_STREQ(name, self->g.map_path);
	EXPECT_EQ(1, self->g.ksyms);
	EXPECT_EQ(0, strncmp(kname, self->g.ksym_name, sizeof(self->g.ksym_name) - 1));
	EXPECT_EQ(1, self->g.lost_n);
	EXPECT_EQ(3, self->g.lost);
}

/* write_file()'s file, then a chunk of unknown type 999, @size, of which @have bytes */
static void append_unknown_chunk(struct __test_metadata *_metadata, const char *path,
				 __u32 size, size_t have)
{
	struct scf_chunk c = { .type = 999, .size = size };
	char pad[64] = { 0 };
	FILE *f;

	write_file(_metadata, path);
	f = fopen(path, "a");
	ASSERT_NE(NULL, f);
	fwrite(&c, sizeof(c), 1, f);
	fwrite(pad, have, 1, f);
	fclose(f);
}

/* A chunk header that claims 1 GiB in a short file: read as cut, at once. */
TEST_F(file, a_chunk_claiming_more_than_the_file_holds_is_cut)
{
	append_unknown_chunk(_metadata, self->path, 1U << 30, 64);
	ASSERT_EQ(0, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(2, self->g.records);
	EXPECT_EQ(1, self->g.lost_n);
}

TEST_F(file, unknown_chunk_skipped)
{
	append_unknown_chunk(_metadata, self->path, 24, 16);
	ASSERT_EQ(0, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(2, self->g.records);
}

TEST_F(file, foreign_or_damaged_refused)
{
	struct scf_chunk c = { .type = SCF_RECORD, .size = 12 };
	FILE *f = fopen(self->path, "w");

	ASSERT_NE(NULL, f);
	fputs("this is not a stallcap file, not at all, no\n", f);
	fclose(f);
	EXPECT_EQ(-EPROTO, scfile_read(self->path, &self->g.sink));

	write_file(_metadata, self->path);
	f = fopen(self->path, "a");
	fwrite(&c, sizeof(c), 1, f);	/* size not a multiple of 8 */
	fwrite(&c, sizeof(c), 1, f);
	fclose(f);
	EXPECT_EQ(-EBADMSG, scfile_read(self->path, &self->g.sink));
	EXPECT_EQ(-ENOENT, scfile_read("/nonexistent/file", &self->g.sink));
}

/* Run fn with stderr going to a file; returns what it printed there. */
static char *capture_stderr(int (*fn)(void *), void *arg, int *ret)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	char *buf = calloc(1, 4096);

	fflush(stderr);
	dup2(fileno(tmp), 2);
	*ret = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	if (fread(buf, 1, 4095, tmp) == 0)
		buf[0] = 0;
	fclose(tmp);
	return buf;
}

struct read_args {
	const char *path;
	struct sc_sink *sk;
};

static int do_read(void *arg)
{
	struct read_args *a = arg;

	return scfile_read(a->path, a->sk);
}

TEST_F(file, truncated_says_what_was_cut)
{
	struct read_args a = { self->path, &self->g.sink };
	struct stat st;
	char *err;
	int ret;

	write_file(_metadata, self->path);
	ASSERT_EQ(0, stat(self->path, &st));
	ASSERT_EQ(0, truncate(self->path, st.st_size - 8));	/* inside SCF_LOST */
	err = capture_stderr(do_read, &a, &ret);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(2, self->g.records);
	EXPECT_NE(NULL, strstr(err, "cut in a chunk of type 4 at offset "));
	EXPECT_NE(NULL, strstr(err, "(16 of its 24 bytes)"));
	free(err);
	ASSERT_EQ(0, truncate(self->path, st.st_size - 24 + 3));	/* in a chunk header */
	err = capture_stderr(do_read, &a, &ret);
	EXPECT_EQ(0, ret);
	EXPECT_NE(NULL, strstr(err, "cut 3 bytes into a chunk header"));
	free(err);
}

TEST_F(file, directory_is_a_directory)
{
	EXPECT_EQ(-EISDIR, scfile_read("/tmp", &self->g.sink));
	EXPECT_EQ(-EPROTO, scfile_read("/dev/null", &self->g.sink));	/* a device */
}

/* A header longer than this version's, from a pipe: skipped by reading. */
TEST_F(file, longer_header_from_a_pipe)
{
	struct scf_header h;
	char extra[64] = { 0 }, *data;
	int p[2], saved;
	size_t n;
	FILE *f;

	write_file(_metadata, self->path);
	f = fopen(self->path, "r");
	ASSERT_NE(NULL, f);
	data = malloc(1 << 16);
	n = fread(data, 1, 1 << 16, f);
	fclose(f);
	ASSERT_LT(n, 60000);
	memcpy(&h, data, sizeof(h));
	h.header_size = sizeof(h) + sizeof(extra);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, fcntl(p[1], F_SETPIPE_SZ, 1 << 17) < 0);
	ASSERT_EQ(sizeof(h), write(p[1], &h, sizeof(h)));
	ASSERT_EQ(sizeof(extra), write(p[1], extra, sizeof(extra)));
	ASSERT_EQ(n - sizeof(h), write(p[1], data + sizeof(h), n - sizeof(h)));
	close(p[1]);
	saved = dup(0);
	dup2(p[0], 0);
	close(p[0]);
	clearerr(stdin);
	EXPECT_EQ(0, scfile_read("-", &self->g.sink));
	dup2(saved, 0);
	close(saved);
	clearerr(stdin);
	EXPECT_EQ(2, self->g.records);
	EXPECT_EQ(1, self->g.lost_n);
	free(data);
}

struct report_args {
	const char *in, *out;
};

static int do_report(void *arg)
{
	struct report_args *a = arg;
	char *argv[] = { "report", (char *)a->in, "-o", (char *)a->out, NULL };

	optind = 0;
	return cmd_report(4, argv);
}

/* A report that failed prints no summary that looks like an empty result. */
TEST_F(file, failed_report_prints_nothing)
{
	char out[80], *err;
	struct report_args a = { "/tmp", out };
	struct stat st;
	int ret;

	snprintf(out, sizeof(out), "%s.out", self->path);
	err = capture_stderr(do_report, &a, &ret);
	EXPECT_EQ(1, ret);
	EXPECT_NE(NULL, strstr(err, "/tmp: Is a directory"));
	ASSERT_EQ(0, stat(out, &st));
	EXPECT_EQ(0, st.st_size);
	free(err);
	a.in = "/nonexistent/stallcap.data";
	err = capture_stderr(do_report, &a, &ret);
	EXPECT_EQ(1, ret);
	ASSERT_EQ(0, stat(out, &st));
	EXPECT_EQ(0, st.st_size);
	free(err);
	unlink(out);
}

/* `stallcap report PATH -f FMT` into @out (@len bytes); its exit status */
static int report_into(const char *path, const char *fmt, char *out, size_t len)
{
	char *argv[] = { "report", (char *)path, "-f", (char *)fmt, "-o", NULL, NULL };
	char name[80];
	size_t n = 0;
	FILE *f;
	int ret;

	snprintf(name, sizeof(name), "%s.%s", path, fmt);
	argv[5] = name;
	optind = 0;
	ret = cmd_report(6, argv);
	f = fopen(name, "r");
	if (f) {
		n = fread(out, 1, len - 1, f);
		fclose(f);
	}
	out[n] = 0;
	unlink(name);
	return ret;
}

/* A file of one stall whose recording host is @hi. */
static void write_host_file(struct __test_metadata *_metadata, const char *path,
			    const struct sc_host_info *hi)
{
	static const __u64 kips[] = { 0xffffffff81000010 };
	struct rec_spec sp = { .stall_id = 1, .pid = 7, .tid = 7, .kips = kips, .nk = 1 };
	struct stallcap_stall_end e = make_end(1, 7, 7, 10, 20, 1);
	struct stallcap_sample *s = make_sample(&sp);
	struct scfile *f = scfile_create(path);
	struct sc_sink *sk;

	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	EXPECT_EQ(0, sk->info(sk, hi));
	EXPECT_EQ(0, sk->record(sk, &s->hdr));
	EXPECT_EQ(0, sk->record(sk, &e.hdr));
	EXPECT_EQ(0, scfile_close(f));
	free(s);
}

/*
 * No sample is marked a memory stall where the recording kernel has no
 * pressure stall information, or has it off: the report says which, once
 * (text: after the summary; JSON: the "host" line); on a host with it on,
 * or from a file that does not say (made before host_flags), nothing.
 */
TEST_F(file, memstall_note_from_the_recording_host)
{
	static const struct {
		__u64 features;
		__u32 flags;
		const char *text, *json;
	} cases[] = {
		{ STALLCAP_FEAT_MEMSTALL, SCF_HOST_KNOWN,
		  "memory stalls not marked: pressure stall information was off on the "
		  "recording host (psi=0 or CONFIG_PSI_DEFAULT_DISABLED; boot with psi=1)\n",
		  "\"psi\":false,\"memstall_marked\":false,\"memstall_note\":" },
		{ 0, SCF_HOST_KNOWN | SCF_HOST_PSI,
		  "memory stalls not marked: the recording kernel has no pressure stall "
		  "information (CONFIG_PSI)\n",
		  "\"psi\":true,\"memstall_marked\":false,\"memstall_note\":" },
		{ STALLCAP_FEAT_MEMSTALL, SCF_HOST_KNOWN | SCF_HOST_PSI, NULL,
		  "\"module_features\":16384,\"psi\":true,\"memstall_marked\":true}" },
		{ STALLCAP_FEAT_MEMSTALL, 0, NULL, NULL },	/* an older file */
	};
	char text[8192], json[8192];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sc_host_info hi = { .release = "6.12.0-test", .boot_id = "b",
					   .module_features = cases[i].features,
					   .host_flags = cases[i].flags };

		write_host_file(_metadata, self->path, &hi);
		ASSERT_EQ(0, report_into(self->path, "text", text, sizeof(text)));
		ASSERT_EQ(0, report_into(self->path, "json", json, sizeof(json)));
		ASSERT_NE(NULL, strstr(text, "1 stall, 1 sample\n")) TH_LOG("%s", text);
		if (cases[i].text) {
			EXPECT_NE(NULL, strstr(text, cases[i].text)) TH_LOG("case %zu: %s", i, text);
		} else {
			EXPECT_EQ(NULL, strstr(text, "memory stalls not marked"))
				TH_LOG("case %zu: %s", i, text);
		}
		if (cases[i].json) {
			EXPECT_NE(NULL, strstr(json, "{\"type\":\"host\",\"release\":\"6.12.0-test\","))
				TH_LOG("case %zu: %s", i, json);
			EXPECT_NE(NULL, strstr(json, cases[i].json)) TH_LOG("case %zu: %s", i, json);
		} else {
			EXPECT_EQ(NULL, strstr(json, "\"type\":\"host\""))
				TH_LOG("case %zu: %s", i, json);
		}
	}
}

static void on_alarm(int sig)
{
	static const char msg[] = "report hung on a FIFO named by a record file\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

/*
 * Map paths come from the recording host: a FIFO there must not hang the
 * report (with or without a recorded build-id), a device node is not opened.
 */
TEST_F(file, map_path_naming_a_fifo)
{
	char fifo[80];
	struct sc_map m = { .start = 0x400000, .end = 0x401000, .prot = SC_PROT_R | SC_PROT_X };
	struct sc_proc p = { .pid = 42, .nr_maps = 1, .maps = &m };
	struct sc_frame f = { .addr = 0x400010 };
	struct usyms *u = usyms_new();
	int i;

	snprintf(fifo, sizeof(fifo), "%s.fifo", self->path);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	m.path = fifo;
	signal(SIGALRM, on_alarm);
	alarm(10);
	for (i = 0; i < 2; i++) {
		m.build_id_len = i ? 20 : 0;
		ASSERT_EQ(0, usyms_add_proc(u, &p));
		usyms_resolve(u, 42, &f);
		EXPECT_EQ(NULL, f.sym);
		EXPECT_STREQ(fifo, f.dso);
	}
	alarm(0);
	errno = 0;
	EXPECT_EQ(-1, open_regular("/dev/zero"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, open_regular(fifo));
	usyms_free(u);
	unlink(fifo);
}

TEST_HARNESS_MAIN
