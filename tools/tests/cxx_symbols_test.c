// SPDX-License-Identifier: GPL-2.0
/*
 * Symbols people can read, on a real C++ program (tests/fixture_cxx.cc,
 * built -O2 -g): its recorded stack, written to a record file with its maps
 * snapshot and reported by the tool after the process is gone, shows
 * demangled names in every format (text, JSON, folded, --top, pprof, HTML),
 * the function inlined at an address as a frame of its own, named with its
 * source line; --no-demangle and --no-inline turn both off; --symfs finds a
 * stripped copy of the binary and its debug file (by build-id, and by
 * .gnu_debuglink) under a directory laid out as /usr/lib/debug is.
 */
#include <sys/stat.h>

#include "helpers.h"
#include "kselftest_harness.h"

#define SPIN	"void app::detail::spin<app::Tag>(app::Tag const&, void**)"
#define INL	"app::detail::check_budget(app::Tag const&, void**)"
#define RING	"app::Ring<long>::operator()(int, void**)"
#define POLL	"app::Server::poll(void**)"
#define FOLDED	"cxx;main;" POLL ";" RING ";" INL ";" SPIN " 10000\n"

FIXTURE(cxx)
{
	char dir[64], bin[128], data[128];
	unsigned long long spin, ret[3];
	int inline_line, call_line;
	struct sc_proc *p;
	char out[32768];
};

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/*
 * The maps of @pid, snapshot as the recorder does; @deleted: its binary is
 * deleted first, its copy kept (under $STALLCAP_KEEP_DIR)
 */
static int snapshot(struct _test_data_cxx *self, pid_t pid, bool deleted)
{
	struct buildid_cache *bc = NULL;
	int ret;

	if (deleted) {
		unlink(self->bin);
		bc = buildid_cache_new();
		if (!bc)
			return -ENOMEM;
		buildid_cache_keep_deleted(bc);
	}
	ret = procmaps_snapshot((__u32)pid, bc, &self->p);
	if (bc)
		buildid_cache_free(bc);
	return ret;
}

/* run the C++ fixture from @self->bin; its addresses and its maps */
static int start(struct _test_data_cxx *self, bool deleted)
{
	char line[512];
	pid_t pid = program_first_line(self->bin, line, sizeof(line));
	int ret = -EPROTO;

	if (pid < 0)
		return pid;
	if (sscanf(line, "spin=%llx ret0=%llx ret1=%llx ret2=%llx inline_line=%d call_line=%d",
		   &self->spin, &self->ret[0], &self->ret[1], &self->ret[2],
		   &self->inline_line, &self->call_line) == 6)
		ret = snapshot(self, pid, deleted);
	program_kill(pid);
	return ret;
}

/* one stall, one sample: the stack a frame-pointer walk finds */
static int write_record(struct _test_data_cxx *self)
{
	__u64 ips[4] = { self->spin + 4, self->ret[0], self->ret[1], self->ret[2] };

	return write_fp_stall(self->data, self->p, "cxx", ips, ARRAY_SIZE(ips));
}

FIXTURE_SETUP(cxx)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/stallcap-cxx.%d", getpid());
	snprintf(self->bin, sizeof(self->bin), "%s/bin/server", self->dir);
	snprintf(self->data, sizeof(self->data), "%s/stallcap.data", self->dir);
	ASSERT_EQ(0, sh("rm -rf %s && mkdir -p %s/bin && cp %s %s", self->dir, self->dir,
			fixture_path("fixture-cxx"), self->bin));
	ASSERT_EQ(0, start(self, false));
	ASSERT_EQ(0, write_record(self));
}

FIXTURE_TEARDOWN(cxx)
{
	sc_proc_free(self->p);
	if (!getenv("KEEP"))
		sh("rm -rf %s", self->dir);
}

/* `stallcap report DATA ARGS`: its stdout, exit status */
static int report(struct _test_data_cxx *self, const char *args)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "%s report %s %s", fixture_path("../stallcap/stallcap"),
		 self->data, args);
	return command_output(cmd, self->out, sizeof(self->out));
}

/* the text report's line of frame #@i, or "" */
static const char *frame_line(struct _test_data_cxx *self, int i)
{
	static char line[1024];
	char tag[16];
	const char *p;

	snprintf(tag, sizeof(tag), "#%-2d 0x", i);
	p = strstr(self->out, tag);
	line[0] = 0;
	if (p)
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
	return line;
}

static __u64 ring_start(struct _test_data_cxx *self)
{
	/* Ring::operator()'s offset, from the inline frame's physical frame */
	const char *l = strstr(frame_line(self, 2), RING "+0x");

	return l ? strtoull(l + strlen(RING "+0x"), NULL, 16) : 0;
}

TEST_F(cxx, text_demangled_with_inline_frame)
{
	char want[1024];

	ASSERT_EQ(0, report(self, ""));
	snprintf(want, sizeof(want), "#0  0x%016llx  " SPIN "+0x4  fixture_cxx.cc:",
		 self->spin + 4);
	EXPECT_EQ(0, strncmp(frame_line(self, 0), want, strlen(want))) TH_LOG("%s", self->out);
	/* the function inlined at the return address, at its own source line */
	snprintf(want, sizeof(want), "#1  0x%016llx  " INL "  fixture_cxx.cc:%d  [inlined] server",
		 self->ret[0], self->inline_line);
	EXPECT_STREQ(want, frame_line(self, 1));
	/* the function it was inlined into, at the call site */
	ASSERT_NE(0, ring_start(self));
	snprintf(want, sizeof(want), "#2  0x%016llx  " RING "+0x%llx  fixture_cxx.cc:%d  [fp] server",
		 self->ret[0], (unsigned long long)ring_start(self), self->call_line);
	EXPECT_STREQ(want, frame_line(self, 2));
	snprintf(want, sizeof(want), "#3  0x%016llx  " POLL "+0x", self->ret[1]);
	EXPECT_EQ(0, strncmp(frame_line(self, 3), want, strlen(want)));
	snprintf(want, sizeof(want), "#4  0x%016llx  main+0x", self->ret[2]);
	EXPECT_EQ(0, strncmp(frame_line(self, 4), want, strlen(want)));
	EXPECT_STREQ("", frame_line(self, 5));
}

TEST_F(cxx, every_format_demangled)
{
	char want[1024];

	ASSERT_EQ(0, report(self, "-f folded"));
	EXPECT_STREQ(FOLDED, self->out);

	ASSERT_EQ(0, report(self, "-f json"));
	snprintf(want, sizeof(want), "{\"addr\":\"0x%llx\",\"method\":\"fp\",\"sym\":\"" INL
		 "\",\"off\":0,\"dso\":\"%s\",", self->ret[0], self->bin);
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);
	snprintf(want, sizeof(want), "\"line\":%d,\"inlined\":true}", self->inline_line);
	EXPECT_NE(NULL, strstr(self->out, want));
	snprintf(want, sizeof(want), "\"sym\":\"" RING "\"");
	EXPECT_NE(NULL, strstr(self->out, want));
	snprintf(want, sizeof(want), "\"line\":%d,\"inlined\":false}", self->call_line);
	EXPECT_NE(NULL, strstr(self->out, want));

	ASSERT_EQ(0, report(self, "--top"));
	EXPECT_NE(NULL, strstr(self->out, SPIN)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, INL));
	EXPECT_NE(NULL, strstr(self->out, RING));
	EXPECT_NE(NULL, strstr(self->out, POLL));
	EXPECT_EQ(NULL, strstr(self->out, "_ZN"));
}

TEST_F(cxx, pprof_and_html_demangled)
{
	char proto[4096], tool[4096];

	snprintf(tool, sizeof(tool), "%s", fixture_path("../stallcap/stallcap"));
	snprintf(proto, sizeof(proto), "%s", fixture_path("../stallcap/proto"));
	if (!system("command -v protoc >/dev/null")) {
		ASSERT_EQ(0, sh("%s report %s -f pprof -o %s.pb.gz && gzip -dc %s.pb.gz | "
				"protoc --decode perftools.profiles.Profile -I%s %s/profile.proto"
				" >%s.txt", tool, self->data, self->data, self->data, proto,
				proto, self->data));
		ASSERT_EQ(0, sh("for n in '\"%s\"' '\"%s\"' '\"%s\"' '\"%s\"'; do "
				"grep -qxF \"string_table: $n\" %s.txt || exit 1; done; "
				"! grep -q _ZN %s.txt", SPIN, INL, RING, POLL, self->data,
				self->data));
	}
	ASSERT_EQ(0, sh("%s report %s -f html | /usr/bin/python3 %s >%s.html.txt", tool,
			self->data, fixture_path("html_check.py"), self->data));
	ASSERT_EQ(0, sh("grep -qxF 'frame %s (10.000 ms, 100.00%%) 1200.00' %s.html.txt && "
			"grep -qxF 'frame %s (10.000 ms, 100.00%%) 1200.00' %s.html.txt",
			INL, self->data, RING, self->data));
}

TEST_F(cxx, no_demangle_no_inline)
{
	ASSERT_EQ(0, report(self, "-f folded --no-demangle"));
	EXPECT_STREQ("cxx;main;_ZN3app6Server4pollEPPv;_ZN3app4RingIlEclEiPPv;"
		     "_ZN3app6detail12check_budgetERKNS_3TagEPPv;"
		     "_ZN3app6detail4spinINS_3TagEEEvRKT_PPv 10000\n", self->out);
	ASSERT_EQ(0, report(self, "-f folded --no-inline"));
	EXPECT_STREQ("cxx;main;" POLL ";" RING ";" SPIN " 10000\n", self->out);
}

/* the build-id of the fixture as "xx/yyyy" */
static void build_id_path(struct _test_data_cxx *self, char *buf, size_t len)
{
	const struct sc_map *m = sc_proc_find(self->p, self->spin);
	size_t n = 0;
	__u32 i;

	buf[0] = 0;
	for (i = 0; m && i < m->build_id_len && n + 4 < len; i++)
		n += snprintf(buf + n, len - n, i == 1 ? "/%02x" : "%02x", m->build_id[i]);
}

/* a stripped copy under SYMFS at the recorded path, the original gone */
static int strip_into_symfs(struct _test_data_cxx *self, char *symfs, size_t len)
{
	snprintf(symfs, len, "%s/symfs", self->dir);
	return sh("mkdir -p %s%s/bin && objcopy --only-keep-debug %s %s/server.debug && "
			"strip --strip-all -o %s%s %s && rm %s", symfs, self->dir,
			self->bin, self->dir, symfs, self->bin, self->bin, self->bin);
}

TEST_F(cxx, symfs_build_id_debug_file)
{
	char symfs[128], id[64], args[256];

	build_id_path(self, id, sizeof(id));
	ASSERT_EQ(41, strlen(id));
	ASSERT_EQ(0, strip_into_symfs(self, symfs, sizeof(symfs)));
	ASSERT_EQ(0, sh("mkdir -p %s/usr/lib/debug/.build-id/%.2s && "
			"mv %s/server.debug %s/usr/lib/debug/.build-id/%s.debug",
			symfs, id, self->dir, symfs, id));
	/* the binary is gone: nothing resolved without --symfs */
	ASSERT_EQ(0, report(self, "-f folded 2>/dev/null"));
	EXPECT_EQ(NULL, strstr(self->out, RING)) TH_LOG("%s", self->out);
	EXPECT_EQ(2, WEXITSTATUS(report(self, "--symfs /nonexistent 2>/dev/null")));
	snprintf(args, sizeof(args), "-f folded --symfs %s", symfs);
	ASSERT_EQ(0, report(self, args));
	/* symbols from the debug file's .symtab, the inline frame from its DWARF */
	EXPECT_STREQ(FOLDED, self->out);
}

TEST_F(cxx, symfs_debuglink)
{
	char symfs[128], args[256];

	ASSERT_EQ(0, strip_into_symfs(self, symfs, sizeof(symfs)));
	/* as Debian's dh_strip did before build-ids: the debug file by name */
	ASSERT_EQ(0, sh("cd %s && objcopy --add-gnu-debuglink=server.debug %s%s && "
			"mkdir -p %s/usr/lib/debug%s/bin && mv server.debug %s/usr/lib/debug%s/bin/"
			" && test ! -e %s/usr/lib/debug/.build-id",
			self->dir, symfs, self->bin, symfs, self->dir, symfs, self->dir, symfs));
	snprintf(args, sizeof(args), "-f folded --symfs %s", symfs);
	ASSERT_EQ(0, report(self, args));
	EXPECT_STREQ(FOLDED, self->out);
}

/*
 * stallcap archive: the binary (stripped, its debug file beside it by
 * .gnu_debuglink) and the debug file packed; unpacked elsewhere, the record
 * reports as on the recording host with --symfs
 */
TEST_F(cxx, archive_then_symfs)
{
	char args[256];

	ASSERT_EQ(0, sh("cd %s/bin && objcopy --only-keep-debug server server.debug && "
			"strip --strip-all server && objcopy --add-gnu-debuglink=server.debug server",
			self->dir));
	ASSERT_EQ(0, sh("%s archive %s -o %s/a.tar.gz >%s/archive.out",
			fixture_path("../stallcap/stallcap"), self->data, self->dir, self->dir));
	ASSERT_EQ(0, sh("tar -tzf %s/a.tar.gz | grep -qx '%s' && "
			"tar -tzf %s/a.tar.gz | grep -qx '%s.debug'",
			self->dir, self->bin + 1, self->dir, self->bin + 1));
	ASSERT_EQ(0, sh("rm -r %s/bin && mkdir %s/prod && tar -xzf %s/a.tar.gz -C %s/prod",
			self->dir, self->dir, self->dir, self->dir));
	ASSERT_EQ(0, report(self, "-f folded 2>/dev/null"));
	EXPECT_EQ(NULL, strstr(self->out, RING));
	snprintf(args, sizeof(args), "-f folded --symfs %s/prod", self->dir);
	ASSERT_EQ(0, report(self, args));
	EXPECT_STREQ(FOLDED, self->out);
}

/*
 * A binary deleted while it ran (a server upgraded in place): archive packs
 * the copy the recorder kept, under the path the maps gave it ("PATH
 * (deleted)"), where report --symfs finds it elsewhere
 */
TEST_F(cxx, archive_packs_the_kept_copy_of_a_deleted_binary)
{
	char args[256], kept[128], deleted[160];

	snprintf(kept, sizeof(kept), "%s/kept", self->dir);
	setenv("STALLCAP_KEEP_DIR", kept, 1);
	sc_proc_free(self->p);
	ASSERT_EQ(0, start(self, true));
	ASSERT_EQ(0, write_record(self));
	snprintf(deleted, sizeof(deleted), "%s (deleted)", self->bin + 1);
	ASSERT_EQ(0, sh("%s archive %s -o %s/a.tar.gz >%s/archive.out",
			fixture_path("../stallcap/stallcap"), self->data, self->dir, self->dir));
	EXPECT_EQ(0, sh("tar -tzf %s/a.tar.gz | grep -qxF '%s'", self->dir, deleted));
	ASSERT_EQ(0, sh("rm -r %s && mkdir %s/prod && tar -xzf %s/a.tar.gz -C %s/prod",
			kept, self->dir, self->dir, self->dir));
	ASSERT_EQ(0, report(self, "-f folded 2>/dev/null"));
	EXPECT_EQ(NULL, strstr(self->out, RING)) TH_LOG("resolved without the archive");
	snprintf(args, sizeof(args), "-f folded --symfs %s/prod", self->dir);
	ASSERT_EQ(0, report(self, args));
	EXPECT_STREQ(FOLDED, self->out);
	unsetenv("STALLCAP_KEEP_DIR");
}

TEST_HARNESS_MAIN
