// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks of a real process, unwound offline: the fixture is stopped
 * with ptrace while it spins in fixture_spin, its registers and the top of
 * its stack are copied into a sample record, the process is killed, and the
 * record alone must unwind to main; through a recursive function too (its
 * frames return to one address, each from a deeper stack pointer), and from
 * a signal handler through the kernel's signal frame; and a binary deleted
 * while it ran, resolved from the copy the snapshot kept.
 */
#include <ftw.h>
#include <sys/stat.h>

#include "helpers.h"
#include "kselftest_harness.h"
#include "usyms.h"

FIXTURE(stack)
{
	struct fixture fx;
	struct capture cap;
	struct stallcap_regs_x86_64 regs;
	struct stallcap_sample *rec;
	struct usyms *us;
	struct sc_proc *proc;
	char dir[64];		/* the deleted variant's: its copy, the kept copy */
};

FIXTURE_VARIANT(stack)
{
	const char *binary;
	bool frame_pointers;
	int recurse;	/* frames of fixture_recurse between level1 and main */
	bool signal;	/* level1 called by a signal handler that main raised */
	bool deleted;	/* the binary a copy, deleted while it runs */
};

FIXTURE_VARIANT_ADD(stack, fp)
{
	.binary = "fixture-fp",
	.frame_pointers = true,
};

FIXTURE_VARIANT_ADD(stack, nofp)
{
	.binary = "fixture-nofp",
	.frame_pointers = false,
};

FIXTURE_VARIANT_ADD(stack, fp_recursive)
{
	.binary = "fixture-fp",
	.frame_pointers = true,
	.recurse = 5,
};

FIXTURE_VARIANT_ADD(stack, nofp_recursive)
{
	.binary = "fixture-nofp",
	.frame_pointers = false,
	.recurse = 5,
};

FIXTURE_VARIANT_ADD(stack, nofp_signal)
{
	.binary = "fixture-nofp",
	.frame_pointers = false,
	.signal = true,
};

FIXTURE_VARIANT_ADD(stack, nofp_deleted)
{
	.binary = "fixture-nofp",
	.frame_pointers = false,
	.deleted = true,
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/*
 * The process's maps, snapshot as the recorder does: a deleted variant's
 * binary is deleted first (its copy kept under @dir/kept).
 */
static int snapshot(pid_t pid, const char *dir, struct sc_proc **p)
{
	struct buildid_cache *bc = NULL;
	char kept[96];
	int ret;

	if (*dir) {
		snprintf(kept, sizeof(kept), "%s/kept", dir);
		setenv("STALLCAP_KEEP_DIR", kept, 1);
		bc = buildid_cache_new();
		if (!bc)
			return -ENOMEM;
		buildid_cache_keep_deleted(bc);
	}
	ret = procmaps_snapshot((__u32)pid, bc, p);
	if (bc)
		buildid_cache_free(bc);
	return ret;
}

FIXTURE_SETUP(stack)
{
	struct sc_proc *p;
	int ret;

	if (variant->recurse) {
		char depth[16];

		snprintf(depth, sizeof(depth), "%d", variant->recurse);
		setenv("FIXTURE_RECURSE", depth, 1);
	}
	if (variant->signal)
		setenv("FIXTURE_SIGNAL", "1", 1);
	if (variant->deleted) {
		char run[128];

		snprintf(self->dir, sizeof(self->dir), "/tmp/stallcap-unwind.XXXXXX");
		ASSERT_NE(NULL, mkdtemp(self->dir));
		snprintf(run, sizeof(run), "%s/run", self->dir);
		ASSERT_EQ(0, copy_file(fixture_path(variant->binary), run));
		ret = fixture_start(run, &self->fx);
		unlink(run);
	} else {
		ret = fixture_start(fixture_path(variant->binary), &self->fx);
	}
	unsetenv("FIXTURE_RECURSE");
	unsetenv("FIXTURE_SIGNAL");
	ASSERT_EQ(0, ret);
	ret = fixture_capture(&self->fx, &self->cap);
	if (ret == -EPERM) {
		fixture_kill(&self->fx);
		SKIP(return, "ptrace is not permitted here");
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, snapshot(self->fx.pid, self->dir, &p));
	fixture_kill(&self->fx);	/* from here on, only the record is left */
	p->pid = 4242;			/* nor does anything need the pid */
	self->us = usyms_new();
	ASSERT_EQ(0, usyms_add_proc(self->us, p));
	self->proc = p;
	self->rec = capture_sample(&self->cap, 4242, &self->regs);
	ASSERT_NE(NULL, self->rec);
}

FIXTURE_TEARDOWN(stack)
{
	fixture_kill(&self->fx);
	usyms_free(self->us);
	sc_proc_free(self->proc);
	free(self->rec);
	if (*self->dir)
		nftw(self->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	unsetenv("STALLCAP_KEEP_DIR");
}

#define find frame_named

static struct unwind_stop last_stop;	/* of the last unwind() */
#define last_end last_stop.end

static int unwind(struct usyms *us, struct stallcap_sample *rec, unsigned int flags,
		  struct sc_frame *f)
{
	struct stallcap_sample_view v;
	int i, n;

	if (stallcap_sample_parse(rec, rec->hdr.size, &v))
		return -1;
	n = unwind_user(us, &v, NULL, flags, f, STALLCAP_MAX_FRAMES, &last_stop);
	for (i = 0; i < n; i++)
		usyms_resolve(us, v.s.pid, &f[i]);
	return n;
}

TEST_F(stack, dwarf_reaches_main)
{
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	int n, spin, l2, l1, m, i, nsig = 0;

	n = unwind(self->us, self->rec, 0, f);
	ASSERT_GE(n, 4);
	for (i = 0; i < n; i++)
		nsig += f[i].signal_frame;
	spin = find(f, n, 0, "fixture_spin");
	l2 = find(f, n, spin + 1, "fixture_level2");
	l1 = find(f, n, l2 + 1, "fixture_level1");
	m = find(f, n, l1 + 1, "main");
	EXPECT_EQ(0, spin);
	EXPECT_EQ(1, l2);
	EXPECT_EQ(2, l1);
	/* every level of the recursion, the same return address repeated */
	for (i = 3; i < 3 + variant->recurse; i++) {
		EXPECT_STREQ("fixture_recurse", f[i].sym ?: "?") TH_LOG("frame %d", i);
		if (i > 4)
			EXPECT_EQ(f[i - 1].addr, f[i].addr) TH_LOG("frame %d", i);
	}
	if (variant->signal) {
		/* the handler, the kernel's signal frame, raise(), main */
		EXPECT_EQ(3, find(f, n, 3, "fixture_on_signal"));
		EXPECT_LT(4, find(f, n, 4, "raise"));
		EXPECT_LT(find(f, n, 4, "raise"), m);
		/* the trampoline the handler returns to, and only it */
		EXPECT_TRUE(f[4].signal_frame);
		EXPECT_FALSE(f[5].is_return);
		EXPECT_EQ(1, nsig);
	} else {
		EXPECT_EQ(3 + variant->recurse, m);
		EXPECT_EQ(0, nsig);
	}
	ASSERT_LT(0, m);
	EXPECT_EQ(UNWIND_END_OUTERMOST, last_end);
	for (i = 1; i <= m; i++)
		EXPECT_EQ(SC_METHOD_DWARF, f[i].method);
	EXPECT_NE(NULL, f[1].file);
	if (f[1].file)
		EXPECT_NE(NULL, strstr(f[1].file, "fixture.c"));
	EXPECT_GT(f[1].line, 0);
}

TEST_F(stack, frame_pointer_walk)
{
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	int n, l2, l1, m;

	n = unwind(self->us, self->rec, UNWIND_NO_DWARF, f);
	ASSERT_GE(n, 1);
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	l2 = find(f, n, 1, "fixture_level2");
	l1 = find(f, n, 1, "fixture_level1");
	m = find(f, n, 1, "main");
	if (variant->frame_pointers) {
		/* the walk alone reaches main */
		EXPECT_EQ(1, l2);
		EXPECT_EQ(2, l1);
		EXPECT_EQ(3 + variant->recurse, m);
		EXPECT_EQ(SC_METHOD_FP, f[3].method);
	} else {
		/* without frame pointers it cannot: DWARF is needed */
		EXPECT_TRUE(l2 < 0 || l1 < 0 || m < 0);
	}
}

TEST_F(stack, truncated_copy_falls_back)
{
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	int n;

	/* a copy too short to hold a frame: DWARF stops, the fp walk remains */
	((struct stallcap_sec_user_stack *)find_section(self->rec,
							STALLCAP_SEC_USER_STACK))->len = 8;
	n = unwind(self->us, self->rec, 0, f);
	ASSERT_GE(n, 1);
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	if (variant->frame_pointers)
		EXPECT_EQ(3 + variant->recurse, find(f, n, 1, "main"));
}

/*
 * A copy that ends inside a recursion (a deep one outgrows the bytes
 * copied), with frame pointers: DWARF stops inside it and the
 * frame-pointer walk continues from the same level, not from the first
 * frame that returns to the same address (which would repeat levels).
 */
TEST_F(stack, copy_ending_inside_a_recursion_continues_by_frame_pointers)
{
	struct stallcap_sec_user_stack *us;
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	__u64 sp = self->cap.regs.rsp, bp = self->cap.regs.rbp;
	int n, i, levels = 0, mains = 0;

	if (!variant->frame_pointers || variant->recurse < 4)
		SKIP(return, "for a recursion with frame pointers");
	/* the copy ends in the 5th frame from the top (the 2nd recursion level) */
	for (i = 0; i < 5; i++) {
		ASSERT_TRUE(bp >= sp && bp + 16 <= sp + self->cap.stack_size);
		memcpy(&bp, self->cap.stack + (bp - sp), 8);
	}
	us = (struct stallcap_sec_user_stack *)find_section(self->rec, STALLCAP_SEC_USER_STACK);
	ASSERT_NE(NULL, us);
	us->len = (__u32)(bp - sp);
	n = unwind(self->us, self->rec, 0, f);
	for (i = 0; i < n; i++) {
		levels += f[i].sym && !strcmp(f[i].sym, "fixture_recurse");
		mains += f[i].sym && !strcmp(f[i].sym, "main");
	}
	EXPECT_EQ(variant->recurse, levels);
	EXPECT_EQ(1, mains);
	EXPECT_EQ(3 + variant->recurse, find(f, n, 0, "main"));
	EXPECT_EQ(SC_METHOD_DWARF, f[1].method);
	EXPECT_EQ(SC_METHOD_FP, f[3 + variant->recurse].method);
	EXPECT_EQ(UNWIND_END_STOPPED, last_end);	/* the fp walk went on */
	for (i = 0; i < n && _metadata->exit_code; i++)
		TH_LOG("frame %d: %s (%s)", i, f[i].sym ?: "?",
		       f[i].method == SC_METHOD_DWARF ? "dwarf" : "fp");
}

/*
 * A copy that ends a few frames down: without frame pointers the frames
 * end where DWARF ran out of bytes, and the unwinder says so (the report
 * then says the copy ended there and how to get more); with them the
 * frame-pointer walk goes on to main.
 */
TEST_F(stack, copy_cut_says_where_the_frames_end)
{
	struct stallcap_sec_user_stack *us;
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	int n, whole;

	whole = unwind(self->us, self->rec, 0, f);
	us = (struct stallcap_sec_user_stack *)find_section(self->rec, STALLCAP_SEC_USER_STACK);
	ASSERT_NE(NULL, us);
	us->len = 128;
	n = unwind(self->us, self->rec, 0, f);
	ASSERT_LE(2, n);
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	if (variant->frame_pointers) {
		EXPECT_EQ(3 + variant->recurse, find(f, n, 1, "main"));
		EXPECT_EQ(UNWIND_END_STOPPED, last_end);
	} else {
		EXPECT_GT(whole, n);
		EXPECT_EQ(UNWIND_END_COPY, last_end);
	}
}

/*
 * A return address that leads nowhere (a corrupt stack, code unmapped
 * since, a stack switch DWARF does not describe): the walk stops before it
 * (the word is no frame: Go's runtime.mcall showed one named after a data
 * symbol) and says why, rather than passing the short stack off as whole
 * (libdw's fallback reads memory from there: that is not the reason).
 */
TEST_F(stack, unwinder_error_is_named)
{
	struct stallcap_sec_user_stack *us;
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	__u64 word, *stack, caller;
	int n, i, hits = 0;

	if (variant->frame_pointers || variant->recurse || variant->signal || variant->deleted)
		SKIP(return, "one variant is enough");
	n = unwind(self->us, self->rec, 0, f);
	ASSERT_LE(3, n);
	caller = f[1].addr;
	/* the return address out of fixture_level2's caller, in the copy: to nowhere */
	us = (struct stallcap_sec_user_stack *)find_section(self->rec, STALLCAP_SEC_USER_STACK);
	ASSERT_NE(NULL, us);
	stack = (__u64 *)(us + 1);
	for (i = 0; i < (int)(us->len / 8); i++) {
		memcpy(&word, &stack[i], 8);
		if (word == f[2].addr) {
			word = 0x1000;
			memcpy(&stack[i], &word, 8);
			hits++;
			break;
		}
	}
	ASSERT_EQ(1, hits);
	n = unwind(self->us, self->rec, 0, f);
	/* the word read as the next return address is not shown as a frame */
	ASSERT_EQ(2, n);
	EXPECT_STREQ("fixture_spin", f[0].sym ?: "?");
	EXPECT_EQ(caller, f[1].addr);
	EXPECT_EQ(UNWIND_END_ERROR, last_end);
	EXPECT_NE(0, last_stop.msg[0]);
	EXPECT_NE(NULL, strstr(last_stop.msg, "0x1000, is in no code")) TH_LOG("%s", last_stop.msg);
}

/*
 * A register set of an architecture this tool does not know is never
 * interpreted: no DWARF unwinding from it, the module's frame-pointer walk
 * stands, labelled as such.
 */
TEST_F(stack, unknown_arch_registers_refused)
{
	struct stallcap_sec_regs *r = (void *)find_section(self->rec, STALLCAP_SEC_REGS);
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	int n, i;

	ASSERT_NE(NULL, r);
	r->arch = 0x7e;
	n = unwind(self->us, self->rec, 0, f);
	ASSERT_GE(n, 1);
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	for (i = 0; i < n; i++)
		EXPECT_EQ(SC_METHOD_FP, f[i].method);
	if (variant->frame_pointers) {
		EXPECT_EQ(3 + variant->recurse, find(f, n, 1, "main"));
	} else {
		EXPECT_EQ(-1, find(f, n, 1, "main"));
	}
}

/*
 * A binary deleted while it ran (a server upgraded in place): the snapshot
 * names it "PATH (deleted)" and keeps a copy by build-id, from which every
 * case above resolved it; without that copy its frames stay unresolved
 * (never another file's symbols).
 */
TEST_F(stack, deleted_binary_resolves_from_its_kept_copy)
{
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	const struct sc_map *m;
	struct usyms *us;
	char empty[96];
	int n;

	if (!variant->deleted)
		SKIP(return, "a binary that was not deleted");
	m = sc_proc_find(self->proc, self->fx.spin);
	ASSERT_NE(NULL, m);
	EXPECT_TRUE(kept_elf_deleted(m->path)) TH_LOG("path %s", m->path);
	n = unwind(self->us, self->rec, 0, f);
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	EXPECT_LT(0, find(f, n, 1, "main"));

	snprintf(empty, sizeof(empty), "%s/none", self->dir);
	setenv("STALLCAP_KEEP_DIR", empty, 1);
	us = usyms_new();
	ASSERT_NE(NULL, us);
	ASSERT_EQ(0, usyms_add_proc(us, self->proc));
	sc_quiet = true;	/* the warning that no copy was kept */
	n = unwind(us, self->rec, UNWIND_NO_DWARF, f);
	sc_quiet = false;
	ASSERT_GE(n, 1);
	EXPECT_EQ(NULL, f[0].sym);
	EXPECT_EQ(-1, find(f, n, 0, "fixture_spin"));
	usyms_free(us);
}

/*
 * A thread sampled inside the vDSO (an event loop reading the clock): the
 * vDSO image the record file keeps names its function and gives its CFI
 * (without the image the walk still got out of it here, by libdw's own
 * fallback; the name is what fails then), and DWARF goes on through the C
 * library's clock_gettime() to the loop and main.
 */
TEST(dwarf_through_the_vdso)
{
	struct stallcap_regs_x86_64 regs;
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	struct stallcap_sample *rec;
	struct fixture fx = { 0 };
	struct capture *cap = calloc(1, sizeof(*cap));
	struct usyms *us = usyms_new();
	struct sc_proc *p;
	size_t len;
	void *img;
	int n, i, loop, m, ret;

	ASSERT_NE(NULL, cap);
	setenv("FIXTURE_CLOCK", "1", 1);
	ret = fixture_start(fixture_path("fixture-nofp"), &fx);
	unsetenv("FIXTURE_CLOCK");
	ASSERT_EQ(0, ret);
	/* the capture waits for a pc in the [vdso] mapping */
	ASSERT_EQ(0, procmaps_snapshot((__u32)fx.pid, NULL, &p));
	for (i = 0; i < (int)p->nr_maps; i++)
		if (!strcmp(p->maps[i].path, "[vdso]")) {
			fx.pc_lo = p->maps[i].start;
			fx.pc_hi = p->maps[i].end;
		}
	ASSERT_NE(0, fx.pc_hi) TH_LOG("no [vdso] mapping");
	ret = fixture_capture(&fx, cap);
	if (ret == -EPERM) {
		fixture_kill(&fx);
		sc_proc_free(p);
		SKIP(return, "ptrace is not permitted here");
	}
	ASSERT_EQ(0, ret);
	fixture_kill(&fx);
	p->pid = 4242;
	ASSERT_EQ(0, usyms_add_proc(us, p));
	sc_proc_free(p);
	ASSERT_EQ(0, vdso_image(&img, &len));	/* the same kernel's */
	usyms_set_vdso(us, img, len);
	free(img);
	rec = capture_sample(cap, 4242, &regs);
	ASSERT_NE(NULL, rec);
	n = unwind(us, rec, 0, f);
	ASSERT_GE(n, 3);
	EXPECT_STREQ("[vdso]", f[0].dso ?: "?");
	/* named from the saved image: the vDSO's clock_gettime, then libc's */
	for (i = 0; i < 2; i++)
		if (f[i].sym && strstr(f[i].sym, "clock_gettime") && f[i].dso &&
		    !strcmp(f[i].dso, "[vdso]"))
			break;
	EXPECT_GT(2, i) TH_LOG("no frame named in the vDSO");
	loop = find(f, n, 1, "fixture_spin_clock");
	m = find(f, n, 1, "main");
	EXPECT_LT(0, loop);
	EXPECT_LT(loop, m);
	for (i = 1; i <= m; i++)
		EXPECT_EQ(SC_METHOD_DWARF, f[i].method) TH_LOG("frame %d %s", i, f[i].sym ?: "?");
	free(rec);
	free(cap);
	usyms_free(us);
}

/*
 * A frame larger than a stack copy holds (96 KiB, as a parser's buffer on
 * the stack; unbound's are 64-129 KiB): DWARF unwinds up to that frame and
 * stops there for want of its return address, 96 KiB above the stack
 * pointer; the walk says so (UNWIND_END_OUTSIDE, the address it needed)
 * instead of taking the frame for the outermost.  With frame pointers the
 * module's walk goes on to main.
 */
static void big_frame(struct __test_metadata *_metadata, const char *binary, bool fp)
{
	struct stallcap_regs_x86_64 regs;
	struct sc_frame f[STALLCAP_MAX_FRAMES];
	struct stallcap_sample *rec;
	struct fixture fx = { 0 };
	struct capture *cap = calloc(1, sizeof(*cap));
	struct usyms *us = usyms_new();
	struct sc_proc *p;
	int n, big, ret;

	ASSERT_NE(NULL, cap);
	setenv("FIXTURE_BIG_FRAME", "1", 1);
	ret = fixture_start(fixture_path(binary), &fx);
	unsetenv("FIXTURE_BIG_FRAME");
	ASSERT_EQ(0, ret);
	ret = fixture_capture(&fx, cap);
	if (ret == -EPERM) {
		fixture_kill(&fx);
		SKIP(return, "ptrace is not permitted here");
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, procmaps_snapshot((__u32)fx.pid, NULL, &p));
	fixture_kill(&fx);
	p->pid = 4242;
	ASSERT_EQ(0, usyms_add_proc(us, p));
	sc_proc_free(p);
	rec = capture_sample(cap, 4242, &regs);
	ASSERT_NE(NULL, rec);
	n = unwind(us, rec, 0, f);
	big = find(f, n, 0, "fixture_big_frame");
	EXPECT_EQ(0, find(f, n, 0, "fixture_spin"));
	EXPECT_EQ(3, big);
	if (fp) {
		EXPECT_LT(big, find(f, n, 0, "main"));
		EXPECT_EQ(UNWIND_END_STOPPED, last_end);
	} else {
		EXPECT_EQ(4, n);	/* nothing guessed past it */
		EXPECT_EQ(UNWIND_END_OUTSIDE, last_end);
		EXPECT_LE(cap->regs.rsp + 96 * 1024, last_stop.addr);
		EXPECT_GT(cap->regs.rsp + 128 * 1024, last_stop.addr);
	}
	free(rec);
	free(cap);
	usyms_free(us);
}

TEST(big_frame_without_frame_pointers_says_where_the_walk_stops)
{
	big_frame(_metadata, "fixture-nofp", false);
}

TEST(big_frame_with_frame_pointers_goes_on_by_them)
{
	big_frame(_metadata, "fixture-fp", true);
}

TEST_HARNESS_MAIN
