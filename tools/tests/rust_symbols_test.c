// SPDX-License-Identifier: GPL-2.0
/*
 * Rust symbols people can read, on a real Rust program (tests/fixture_rust.rs,
 * built by rustc twice: its default, legacy mangling, "_ZN...17h<hash>E",
 * which the C++ demangler turned into "fixture_rust::spin_hot::h0123..."
 * and "Ring$LT$T$GT$", and v0, "_RNv...", which it left as it was): its
 * stack, written to a record file with its maps snapshot and reported by
 * the tool after the process is gone, shows each function as Rust tools
 * do (binutils, gdb, perf: libiberty's demangler), in text and folded
 * output; --no-demangle shows the symbols as the ELF file spells them.
 */
#include <sys/stat.h>

#include "helpers.h"
#include "kselftest_harness.h"

#define SPIN	"fixture_rust::spin_hot"
#define MAIN	"fixture_rust::main"

FIXTURE(rust)
{
	char dir[64], data[128];
	unsigned long long spin, poll, main;
	struct sc_proc *p;
	char out[32768];
};

FIXTURE_VARIANT(rust)
{
	const char *bin;
	const char *poll;	/* the generic method, as the mangling spells it */
	const char *raw;	/* how the mangled names begin */
};

/* legacy mangling keeps no type arguments: Ring<T>, not Ring<u32> */
FIXTURE_VARIANT_ADD(rust, legacy)
{
	.bin = "fixture-rust",
	.poll = "fixture_rust::Ring<T>::poll",
	.raw = "_ZN12fixture_rust",
};

FIXTURE_VARIANT_ADD(rust, v0)
{
	.bin = "fixture-rust-v0",
	.poll = "<fixture_rust::Ring<u32>>::poll",
	.raw = "_R",
};

/* run the fixture; its addresses and its maps, read while it waits */
static int start(struct _test_data_rust *self, const char *bin)
{
	char line[512];
	pid_t pid = program_first_line(bin, line, sizeof(line));
	int ret = -EPROTO;

	if (pid < 0)
		return pid;
	if (sscanf(line, "spin=%llx poll=%llx main=%llx", &self->spin, &self->poll,
		   &self->main) == 3)
		ret = procmaps_snapshot((__u32)pid, NULL, &self->p);
	program_kill(pid);
	return ret;
}

/* one stall, one sample: spin_hot under Ring::poll under main */
static int write_record(struct _test_data_rust *self)
{
	__u64 ips[3] = { self->spin + 4, self->poll + 8, self->main + 8 };

	return write_fp_stall(self->data, self->p, "rust", ips, ARRAY_SIZE(ips));
}

FIXTURE_SETUP(rust)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/stallcap-rust.%d", getpid());
	snprintf(self->data, sizeof(self->data), "%s/stallcap.data", self->dir);
	ASSERT_EQ(0, mkdir(self->dir, 0700));
	ASSERT_EQ(0, start(self, fixture_path(variant->bin)));
	ASSERT_EQ(0, write_record(self));
}

FIXTURE_TEARDOWN(rust)
{
	sc_proc_free(self->p);
	unlink(self->data);
	rmdir(self->dir);
}

/* `stallcap report DATA ARGS`: its stdout, exit status */
static int report(struct _test_data_rust *self, const char *args)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "%s report --no-inline %s %s",
		 fixture_path("../stallcap/stallcap"), args, self->data);
	return command_output(cmd, self->out, sizeof(self->out));
}

TEST_F(rust, folded_names_demangled)
{
	char want[512];

	ASSERT_EQ(0, report(self, "-f folded"));
	snprintf(want, sizeof(want), "rust;" MAIN ";%s;" SPIN " 10000\n", variant->poll);
	EXPECT_STREQ(want, self->out);
}

TEST_F(rust, text_frames_demangled)
{
	char want[512];

	ASSERT_EQ(0, report(self, ""));
	snprintf(want, sizeof(want), "#0  0x%016llx  " SPIN "+0x4  ", self->spin + 4);
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);
	snprintf(want, sizeof(want), "#1  0x%016llx  %s+0x8  ", self->poll + 8, variant->poll);
	EXPECT_NE(NULL, strstr(self->out, want));
	snprintf(want, sizeof(want), "#2  0x%016llx  " MAIN "+0x8  ", self->main + 8);
	EXPECT_NE(NULL, strstr(self->out, want));
	/* no hash suffix, no "$LT$" escape, no mangled name left */
	EXPECT_EQ(NULL, strstr(self->out, "::h"));
	EXPECT_EQ(NULL, strstr(self->out, "$LT$"));
	EXPECT_EQ(NULL, strstr(self->out, variant->raw));
}

TEST_F(rust, no_demangle_shows_the_elf_names)
{
	ASSERT_EQ(0, report(self, "--no-demangle -f folded"));
	EXPECT_EQ(0, strncmp(self->out, "rust;", 5)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, variant->raw));
	EXPECT_EQ(NULL, strstr(self->out, SPIN));
}

TEST_HARNESS_MAIN
