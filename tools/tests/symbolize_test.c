// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolization: user addresses of a fixture built with and without frame
 * pointers, resolved from a maps snapshot after the process is gone; a
 * binary replaced after the recording is detected by its build-id; the vDSO
 * from its saved image; kernel addresses through a kallsyms file.
 */
#include <gelf.h>
#include <sys/auxv.h>

#include "helpers.h"
#include "kselftest_harness.h"
#include "usyms.h"

FIXTURE(user)
{
	struct fixture fx;
	struct usyms *us;
	struct sc_proc *p;
	char copy[128];
};

FIXTURE_VARIANT(user)
{
	const char *binary;
};

FIXTURE_VARIANT_ADD(user, fp)
{
	.binary = "fixture-fp",
};

FIXTURE_VARIANT_ADD(user, nofp)
{
	.binary = "fixture-nofp",
};

/* lld's layout: the code's segment in the read-only one's file page */
FIXTURE_VARIANT_ADD(user, lld)
{
	.binary = "fixture-lld",
};

/* Run a private copy of the fixture (the stale-binary test replaces it). */
FIXTURE_SETUP(user)
{
	snprintf(self->copy, sizeof(self->copy), "/tmp/stallcap-sym-test.%d", getpid());
	ASSERT_EQ(0, copy_file(fixture_path(variant->binary), self->copy));
	ASSERT_EQ(0, fixture_start(self->copy, &self->fx));
	ASSERT_EQ(0, procmaps_snapshot((__u32)self->fx.pid, NULL, &self->p));
	fixture_kill(&self->fx);
	self->us = usyms_new();
	ASSERT_EQ(0, usyms_add_proc(self->us, self->p));
}

FIXTURE_TEARDOWN(user)
{
	fixture_kill(&self->fx);
	usyms_free(self->us);
	sc_proc_free(self->p);
	unlink(self->copy);
}

static struct sc_frame resolve(struct usyms *us, __u32 pid, __u64 addr, bool is_return)
{
	struct sc_frame f = { .addr = addr, .is_return = is_return };

	usyms_resolve(us, pid, &f);
	return f;
}

TEST_F(user, functions_and_lines)
{
	__u32 pid = self->p->pid;
	struct sc_frame f;

	f = resolve(self->us, pid, self->fx.spin, false);
	ASSERT_NE(NULL, f.sym);
	EXPECT_STREQ("fixture_spin", f.sym);
	EXPECT_EQ(0, f.off);
	ASSERT_NE(NULL, f.file);
	EXPECT_NE(NULL, strstr(f.file, "fixture.c"));
	EXPECT_GT(f.line, 0);
	EXPECT_STREQ(self->copy, f.dso);

	/* a return address is looked up one byte back, its offset kept */
	f = resolve(self->us, pid, self->fx.level1 + 1, true);
	ASSERT_NE(NULL, f.sym);
	EXPECT_STREQ("fixture_level1", f.sym);
	EXPECT_EQ(1, f.off);

	f = resolve(self->us, pid, self->fx.main_ + 2, false);
	ASSERT_NE(NULL, f.sym);
	EXPECT_STREQ("main", f.sym);
	EXPECT_EQ(2, f.off);

	/* outside every mapping: nothing */
	f = resolve(self->us, pid, 0x10, false);
	EXPECT_EQ(NULL, f.sym);
	EXPECT_EQ(NULL, f.dso);
}

TEST_F(user, build_id_recorded)
{
	const struct sc_map *m = sc_proc_find(self->p, self->fx.spin);
	__u8 id[SC_BUILD_ID_MAX];
	__u32 len = 0;

	ASSERT_NE(NULL, m);
	EXPECT_TRUE(m->prot & SC_PROT_X);
	ASSERT_EQ(0, elf_file_build_id(self->copy, id, &len));
	EXPECT_EQ(20, len);
	EXPECT_EQ(len, m->build_id_len);
	EXPECT_EQ(0, memcmp(id, m->build_id, len));
}

TEST_F(user, replaced_binary_not_trusted)
{
	const char *other = strcmp(variant->binary, "fixture-fp") ? "fixture-fp" : "fixture-nofp";
	struct usyms *us = usyms_new();
	struct sc_frame f;

	ASSERT_EQ(0, copy_file(fixture_path(other), self->copy));
	ASSERT_EQ(0, usyms_add_proc(us, self->p));
	f = resolve(us, self->p->pid, self->fx.spin, false);
	EXPECT_EQ(NULL, f.sym);	/* unresolved rather than wrong */
	usyms_free(us);
}

/* Address of a dynamic symbol of the vDSO we run with. */
static __u64 vdso_sym(const char *name)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	Elf_Scn *scn = NULL;
	__u64 addr = 0;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf *elf;
	int i;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)base, 8192);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !d)
			continue;
		for (i = 0; gelf_getsym(d, i, &sym); i++)
			if (!strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), name))
				addr = base + sym.st_value;
	}
	elf_end(elf);
	return addr;
}

TEST(vdso_from_saved_image)
{
	struct sc_proc *p;
	struct usyms *us = usyms_new();
	__u64 addr = vdso_sym("__vdso_clock_gettime");
	struct sc_frame f;
	size_t len;
	void *img;

	ASSERT_NE(0, addr);
	ASSERT_EQ(0, vdso_image(&img, &len));
	ASSERT_EQ(0, procmaps_snapshot((__u32)getpid(), NULL, &p));
	ASSERT_EQ(0, usyms_add_proc(us, p));
	f = resolve(us, p->pid, addr + 3, false);
	EXPECT_EQ(NULL, f.sym);	/* no image yet */
	usyms_set_vdso(us, img, len);
	f = resolve(us, p->pid, addr + 3, false);
	ASSERT_NE(NULL, f.sym);
	EXPECT_NE(NULL, strstr(f.sym, "clock_gettime"));
	EXPECT_EQ(3, f.off);
	EXPECT_STREQ("[vdso]", f.dso);
	free(img);
	sc_proc_free(p);
	usyms_free(us);
}

/* @text written as a kallsyms file and loaded; *@ret: ksyms_load()'s result. */
static struct ksyms *load_kallsyms_text(const char *text, int *ret)
{
	struct ksyms *ks = ksyms_new();
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/stallcap-kallsyms.%d", getpid());
	f = fopen(path, "w");
	*ret = -EIO;
	if (!ks || !f || fputs(text, f) < 0 || fclose(f)) {
		unlink(path);
		return ks;
	}
	*ret = ksyms_load(ks, path);
	unlink(path);
	return ks;
}

TEST(kallsyms_file)
{
	const struct ksym *k;
	struct ksyms *ks;
	int ret;

	ks = load_kallsyms_text("ffffffff81000000 T _stext\n"
				"ffffffff81000100 T do_sys_poll\n"
				"ffffffff81000180 D some_data\n"
				"ffffffff81000200 t helper\n"
				"ffffffffc0000000 t stallcap_timer_fn\t[stallcap]\n"
				"ffffffffc0000080 T stallcap_capture\t[stallcap]\n"
				"ffffffffc0040000 t spin_loop\t[spin]\n", &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(6, ksyms_count(ks));	/* data symbols left out */
	k = ksyms_find(ks, 0xffffffff810001a0);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("do_sys_poll", k->name);	/* spans up to the next text symbol */
	EXPECT_EQ(NULL, k->mod);
	k = ksyms_find(ks, 0xffffffffc0000010);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("stallcap_timer_fn", k->name);
	EXPECT_STREQ("stallcap", k->mod);
	EXPECT_EQ(NULL, ksyms_find(ks, 0xffffffff80000000));
	/* a module's last symbol spans 64 KiB at most, not up to the next module */
	k = ksyms_find(ks, 0xffffffffc0000080 + 0x8000);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("stallcap_capture", k->name);
	EXPECT_EQ(NULL, ksyms_find(ks, 0xffffffffc0000080 + 0x17000));
	k = ksyms_find(ks, 0xffffffffc0040010);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("spin", k->mod);
	ksyms_free(ks);

	/* what an unprivileged reader sees: every address zero */
	ks = load_kallsyms_text("0000000000000000 T _stext\n0000000000000000 T do_sys_poll\n",
				&ret);
	EXPECT_EQ(-EPERM, ret);
	ksyms_free(ks);
}

/*
 * Names at one address: the function, not the marker of a section's end
 * that kallsyms lists after it (6.12: a sample at the retpoline thunk's
 * first instruction named __softirqentry_text_end+0x0), nor the array's
 * name before it; a marker alone keeps its name.
 */
TEST(kallsyms_alias_prefers_the_function)
{
	const struct ksym *k;
	struct ksyms *ks;
	int ret;

	ks = load_kallsyms_text("ffffffff81000000 T _stext\n"
				"ffffffff81000100 T __softirqentry_text_start\n"
				"ffffffff81000100 T __do_softirq\n"
				"ffffffff81000200 T __x86_indirect_thunk_array\n"
				"ffffffff81000200 T __x86_indirect_thunk_rax\n"
				"ffffffff81000200 T __softirqentry_text_end\n"
				"ffffffff81000220 T __x86_indirect_thunk_rcx\n"
				"ffffffff81000400 T __irqentry_text_end\n", &ret);
	ASSERT_EQ(0, ret);
	k = ksyms_find(ks, 0xffffffff81000200);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("__x86_indirect_thunk_rax", k->name);
	EXPECT_EQ(0xffffffff81000200, k->addr);
	EXPECT_EQ(0x20, k->size);
	k = ksyms_find(ks, 0xffffffff81000110);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("__do_softirq", k->name);
	EXPECT_STREQ("_stext", ksyms_find(ks, 0xffffffff81000010)->name);
	EXPECT_STREQ("__irqentry_text_end", ksyms_find(ks, 0xffffffff81000410)->name);
	EXPECT_STREQ("__x86_indirect_thunk_rcx", ksyms_find(ks, 0xffffffff81000220)->name);
	ksyms_free(ks);
}

/*
 * A ThinLTO kernel's renamed static functions (clang, CONFIG_LTO_CLANG):
 * named as in the sources, the build's digits dropped; another name with
 * ".llvm." in it is kept whole.
 */
TEST(kallsyms_thinlto_suffix_is_dropped)
{
	struct ksyms *ks;
	int ret;

	ks = load_kallsyms_text("ffffffff81000000 T _stext\n"
				"ffffffff81000100 T __cfi_pipe_write.llvm.3174482935419761955\n"
				"ffffffff81000110 t pipe_write.llvm.3174482935419761955\n"
				"ffffffff81000400 t tty_read.llvm.11563615574171130211\n"
				"ffffffff81000600 t odd.llvm.name\n"
				"ffffffff81000700 t odd2.llvm.\n"
				"ffffffffc0000000 t fuse_dev_read.llvm.9049679682978158119\t[fuse]\n",
				&ret);
	ASSERT_EQ(0, ret);
	EXPECT_STREQ("pipe_write", ksyms_find(ks, 0xffffffff81000120)->name);
	EXPECT_STREQ("__cfi_pipe_write", ksyms_find(ks, 0xffffffff81000100)->name);
	EXPECT_STREQ("tty_read", ksyms_find(ks, 0xffffffff81000400)->name);
	EXPECT_STREQ("odd.llvm.name", ksyms_find(ks, 0xffffffff81000600)->name);
	EXPECT_STREQ("odd2.llvm.", ksyms_find(ks, 0xffffffff81000700)->name);
	EXPECT_STREQ("fuse_dev_read", ksyms_find(ks, 0xffffffffc0000010)->name);
	EXPECT_STREQ("fuse", ksyms_find(ks, 0xffffffffc0000010)->mod);
	ksyms_free(ks);
}

/*
 * The loader cuts lines in place: lines out of address order (sorted then),
 * malformed lines skipped, the last line without its newline.
 */
TEST(kallsyms_out_of_order_and_malformed)
{
	const struct ksym *k;
	struct ksyms *ks;
	int ret;

	ks = load_kallsyms_text("ffffffffc0000000 t mod_fn\t[some_mod]\n"
				"not a line\n"
				"ffffffff81000000 TT bad_type\n"
				"\n"
				"ffffffff81000000 T _stext\n"
				"ffffffffc0000100 T mod_fn2\t[some_mod]\n"
				"ffffffff81000100 t last_one", &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(4, ksyms_count(ks));
	k = ksyms_find(ks, 0xffffffff81000010);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("_stext", k->name);
	k = ksyms_find(ks, 0xffffffff81000100);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("last_one", k->name);
	EXPECT_EQ(NULL, k->mod);
	k = ksyms_find(ks, 0xffffffffc0000101);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("mod_fn2", k->name);
	EXPECT_STREQ("some_mod", k->mod);
	k = ksyms_find(ks, 0xffffffffc0000001);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("mod_fn", k->name);
	ksyms_free(ks);
}

TEST(proc_kallsyms)
{
	struct ksyms *ks = ksyms_new();
	unsigned long long addr = 0;
	const struct ksym *k;
	char line[256], name[128], type;
	FILE *f = fopen("/proc/kallsyms", "r");
	int ret;

	if (!f)
		SKIP(return, "no /proc/kallsyms");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule") && (type == 'T' || type == 't'))
			break;
	fclose(f);
	ret = ksyms_load(ks, "/proc/kallsyms");
	if (ret == -EPERM || !addr) {
		ksyms_free(ks);
		SKIP(return, "kernel addresses hidden");
	}
	ASSERT_EQ(0, ret);
	k = ksyms_find(ks, addr + 1);
	ASSERT_NE(NULL, k);
	EXPECT_STREQ("schedule", k->name);
	ksyms_free(ks);
}

/*
 * Which kernel frames are return addresses (looked up one byte back): all
 * but the first, and but the one under an interrupt's or exception's entry,
 * which is the instruction the interrupt found.
 */
TEST(kernel_frames_under_an_interrupt_entry_are_not_returns)
{
	static const char *const entries[] = {
		"asm_sysvec_apic_timer_interrupt", "asm_sysvec_irq_work", "asm_exc_page_fault",
		"asm_exc_nmi", "asm_common_interrupt", "asm_spurious_interrupt",
		"asm_fred_entrypoint_kernel",
	};
	static const char *const others[] = {
		"sysvec_apic_timer_interrupt", "__sysvec_irq_work", "exc_page_fault",
		"common_interrupt", "irq_work_run", "entry_SYSCALL_64", "asm_load_gs_index",
	};
	struct ksym k = { .addr = 0xffffffff81000000, .size = 0x40 };
	size_t i;

	EXPECT_FALSE(ksym_frame_is_return(0, NULL));
	EXPECT_TRUE(ksym_frame_is_return(1, NULL));
	for (i = 0; i < ARRAY_SIZE(entries); i++) {
		k.name = entries[i];
		EXPECT_FALSE(ksym_frame_is_return(3, &k)) TH_LOG("under %s", entries[i]);
		EXPECT_FALSE(ksym_frame_is_return(0, &k));
	}
	for (i = 0; i < ARRAY_SIZE(others); i++) {
		k.name = others[i];
		EXPECT_TRUE(ksym_frame_is_return(3, &k)) TH_LOG("under %s", others[i]);
	}
}

TEST_HARNESS_MAIN
