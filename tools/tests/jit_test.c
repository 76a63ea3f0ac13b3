// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks through code a JIT made: the fixture (no frame pointers, DWARF
 * only) calls fixture_level2 from code it wrote into an anonymous executable
 * mapping and named in a perf map, as a JVM or V8 does.  It is stopped with
 * ptrace while it spins, the record made of its registers and stack copy is
 * resolved as `stallcap report` resolves it (resolve_stall()), and:
 *   - code that keeps a frame pointer is walked through, to main, and its
 *     frame is named from the perf map;
 *   - two functions of such code, the outer one the bottom of its stack
 *     (a frame record of no caller, as an Erlang process's first frame):
 *     both named, and the report says the JIT's frame-pointer chain ended
 *     (UNWIND_END_JIT_CHAIN), not that the JIT keeps no frame pointers;
 *   - at a JIT function's first instruction, before it pushed anything, its
 *     caller is the return address at the stack pointer: named, and the
 *     walk goes on to main (frame pointers skip that caller: BEAM's
 *     samples at a loop's entry lacked the function that called it);
 *   - code that uses rbp as a general register (a loop bound) ends the walk
 *     at its frame, named, and the report says why (the end is the JIT's
 *     code, UNWIND_END_JIT), not "a word outside the copy" at the loop
 *     bound's address, which is what the frame-pointer fallback read there
 *     (CI85's attach_java_test, a sample inside System.nanoTime()).
 */
#include <ftw.h>
#include <sys/stat.h>

#include "helpers.h"
#include "kselftest_harness.h"
#include "output.h"
#include "usyms.h"

FIXTURE(jit)
{
	struct fixture fx;
	struct capture cap;
	struct stallcap_regs_x86_64 regs;
	struct stalls st;
	struct resolver r;
	struct sc_rstall rs;
	char dir[64];
	char *out;
	size_t len;
};

FIXTURE_VARIANT(jit)
{
	const char *code;	/* FIXTURE_JIT */
};

FIXTURE_VARIANT_ADD(jit, keeps_frame_pointer)
{
	.code = "fp",
};

FIXTURE_VARIANT_ADD(jit, frame_pointer_chain_ends)
{
	.code = "chain",
};

FIXTURE_VARIANT_ADD(jit, rbp_a_general_register)
{
	.code = "rbp",
};

FIXTURE_VARIANT_ADD(jit, at_a_functions_entry)
{
	.code = "entry",
};

/* The address the fixture's perf map gives @name, or 0. */
static unsigned long long perfmap_addr(const char *dir, pid_t pid, const char *name)
{
	unsigned long long addr, len, found = 0;
	char path[128], sym[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!found && fscanf(f, "%llx %llx %127s", &addr, &len, sym) == 3)
		if (!strcmp(sym, name))
			found = addr;
	fclose(f);
	return found;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

FIXTURE_SETUP(jit)
{
	struct stallcap_stall_end e;
	struct stallcap_sample *s;
	struct sc_proc *p;
	pid_t pid;
	int ret;

	snprintf(self->dir, sizeof(self->dir), "/tmp/stallcap-jit.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	setenv("FIXTURE_JIT", variant->code, 1);
	setenv("FIXTURE_JIT_MAPS", self->dir, 1);
	ret = fixture_start(fixture_path("fixture-nofp"), &self->fx);
	unsetenv("FIXTURE_JIT");
	unsetenv("FIXTURE_JIT_MAPS");
	ASSERT_EQ(0, ret);
	if (!strcmp(variant->code, "entry")) {
		/* stopped at the spin, the JIT function's first instruction */
		self->fx.pc_lo = perfmap_addr(self->dir, self->fx.pid,
					      "Interpreted:JitThunk.callentry");
		ASSERT_NE(0, self->fx.pc_lo);
		self->fx.pc_hi = self->fx.pc_lo + 1;
	}
	ret = fixture_capture(&self->fx, &self->cap);
	if (ret == -EPERM) {
		fixture_kill(&self->fx);
		SKIP(return, "ptrace is not permitted here");
	}
	ASSERT_EQ(0, ret);
	pid = self->fx.pid;
	ASSERT_EQ(0, procmaps_snapshot((__u32)pid, NULL, &p));
	fixture_kill(&self->fx);	/* the perf map stays, as a JIT's does */
	perfmap_set_dir(self->dir);

	self->r.ks = ksyms_new();
	self->r.us = usyms_new();
	ASSERT_EQ(0, usyms_add_proc(self->r.us, p));
	sc_proc_free(p);
	stalls_init(&self->st);
	s = capture_sample(&self->cap, pid, &self->regs);
	ASSERT_NE(NULL, s);
	stalls_add(&self->st, &s->hdr);
	free(s);
	e = make_end(1, (__u32)pid, (__u32)pid, 1000, 3000, 1);
	stalls_add(&self->st, &e.hdr);
	ASSERT_EQ(0, resolve_stall(&self->r, self->st.head, &self->rs));
	ASSERT_EQ(1, resolve_stall_next(&self->rs));
}

FIXTURE_TEARDOWN(jit)
{
	fixture_kill(&self->fx);
	resolve_stall_free(&self->rs);
	stalls_free(&self->st);
	ksyms_free(self->r.ks);
	usyms_free(self->r.us);
	perfmap_free_all();
	perfmap_set_dir(NULL);
	free(self->out);
	if (*self->dir)
		nftw(self->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* Index of the first user frame named @sym at or after @from, or -1. */
static int find(const struct sc_rsample *c, int from, const char *sym)
{
	return frame_named(c->uf, c->nu, from, sym);
}

static void log_frames(struct __test_metadata *_metadata, const struct sc_rsample *c)
{
	int i;

	for (i = 0; i < c->nu; i++)
		TH_LOG("#%d 0x%llx %s %s", i, (unsigned long long)c->uf[i].addr,
		       c->uf[i].sym ? c->uf[i].sym : "?", c->uf[i].dso ? c->uf[i].dso : "");
	TH_LOG("end %d", c->ustop.end);
}

TEST_F(jit, walk)
{
	const struct sc_rsample *c = &self->rs.cur;
	char name[64];
	FILE *m;
	int jit;

	snprintf(name, sizeof(name), "Interpreted:JitThunk.call%s",
		 strcmp(variant->code, "rbp") ? "fp" : "rbp");
	log_frames(_metadata, c);
	if (!strcmp(variant->code, "entry")) {
		/*
		 * frame 0 the JIT function, before it pushed anything: its
		 * caller is the return address at the stack pointer (frame
		 * pointers would skip it), and DWARF goes on from there
		 */
		ASSERT_LE(3, c->nu);
		EXPECT_EQ(0, find(c, 0, "Interpreted:JitThunk.callentry"));
		EXPECT_EQ(0, c->uf[0].off);
		EXPECT_EQ(1, find(c, 0, "fixture_jit_level1"));
		EXPECT_EQ(2, find(c, 0, "main"));
		EXPECT_EQ(UNWIND_END_OUTERMOST, c->ustop.end);
		return;
	}
	/* the innermost frame is the function that was running */
	ASSERT_LE(3, c->nu);
	EXPECT_EQ(0, find(c, 0, "fixture_spin"));
	EXPECT_EQ(1, find(c, 0, "fixture_level2"));
	/* the JIT's frame, named by the perf map, in no file */
	jit = find(c, 0, name);
	ASSERT_EQ(2, jit);
	EXPECT_FALSE(c->jit_unnamed);
	if (!strcmp(variant->code, "fp")) {
		/* its frame pointer leads on, and DWARF to main */
		EXPECT_EQ(3, find(c, 0, "fixture_jit_level1"));
		EXPECT_EQ(4, find(c, 0, "main"));
		EXPECT_NE(UNWIND_END_JIT, c->ustop.end);
		return;
	}
	m = open_memstream(&self->out, &self->len);
	ASSERT_NE(NULL, m);
	fmt_text_stall(m, &self->rs);
	fclose(m);
	if (!strcmp(variant->code, "chain")) {
		/* its caller, in JIT code too, holds the end of the chain */
		EXPECT_EQ(4, c->nu);
		EXPECT_EQ(3, find(c, 0, "Interpreted:JitThunk.bottom"));
		EXPECT_EQ(UNWIND_END_JIT_CHAIN, c->ustop.end);
		EXPECT_NE(NULL, strstr(self->out, "(the walk stops here: the frame-pointer chain "
				       "through a JIT's code ends"));
		return;
	}
	/* rbp holds a loop bound: the walk ends at the JIT's frame, and says so */
	EXPECT_EQ(3, c->nu);
	EXPECT_EQ(UNWIND_END_JIT, c->ustop.end);
	EXPECT_NE(NULL, strstr(self->out, "(the walk stops here: in code no file describes "
			       "(a JIT's)"));
	EXPECT_EQ(NULL, strstr(self->out, "0x2718"));
}

TEST_HARNESS_MAIN
