// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): user stacks: the module's frame-pointer walk, and DWARF
 * unwinding of the raw stack copy with libdwfl.
 *
 * The record carries the user registers (a register set tagged with its
 * architecture: only STALLCAP_ARCH_X86_64 is unwound here, any other set is
 * left alone and the frame-pointer walk stands) and stack_size bytes copied
 * from the stack pointer upwards.  libdwfl unwinds from those registers with the CFI of the
 * mapped files (.eh_frame / .debug_frame); its memory_read callback serves
 * the copied bytes, so the process need not exist any more.
 *
 * Choice of the user stack, per sample:
 *  - the frame-pointer walk is cut at its first address outside executable
 *    memory (a walk through code without frame pointers reads garbage);
 *  - with a raw copy, DWARF unwinding runs; frames past its end that the
 *    frame-pointer walk also reached are appended (labelled fp);
 *  - DWARF wins if it ended cleanly (outermost frame reached, not the end
 *    of the copy) or is at least as long; else the frame-pointer walk.  A
 *    walk through a function without a frame skips its caller, which DWARF
 *    does not, so DWARF goes first.
 */
#include <elfutils/libdwfl.h>
#include <elfutils/version.h>
#include <errno.h>
#include <string.h>

#include "tool.h"
#include "usyms.h"

/* x86-64 DWARF register numbers 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
static void dwarf_regs(const struct stallcap_regs_x86_64 *r, Dwarf_Word *w)
{
	w[0] = r->ax;
	w[1] = r->dx;
	w[2] = r->cx;
	w[3] = r->bx;
	w[4] = r->si;
	w[5] = r->di;
	w[6] = r->bp;
	w[7] = r->sp;
	w[8] = r->r8;
	w[9] = r->r9;
	w[10] = r->r10;
	w[11] = r->r11;
	w[12] = r->r12;
	w[13] = r->r13;
	w[14] = r->r14;
	w[15] = r->r15;
	w[16] = r->ip;
}

static pid_t uw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwind_state *uw = arg;

	if (*thread_argp || !uw->cur)
		return 0;
	*thread_argp = uw;
	return (pid_t)uw->cur->s.tid;
}

static bool uw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unwind_state *uw = arg;

	if (!uw->cur || (pid_t)uw->cur->s.tid != tid)
		return false;
	*thread_argp = uw;
	return true;
}

/*
 * Serve 8 bytes of a copy of @size bytes from @start.  A read past its end,
 * within the most a copy can hold (a larger copy would have had it; beyond,
 * it is another stack), sets *@past.
 */
static bool copy_read(const void *bytes, __u64 start, __u32 size, Dwarf_Addr addr,
		      Dwarf_Word *result, bool *past)
{
	if (addr < start)
		return false;
	if (addr - start > size || size - (addr - start) < sizeof(*result)) {
		*past = *past || addr - start < STALLCAP_MAX_USER_STACK;
		return false;
	}
	memcpy(result, (const char *)bytes + (addr - start), sizeof(*result));
	return true;
}

/*
 * Serve 8 bytes from the stack copy, from the stack a signal handler on
 * the alternate stack interrupted, or from the runs copied past a gap;
 * anything else is unknown.  A read that
 * neither serves is noted: libdw takes a frame it cannot read for the
 * outermost, so only this tells a walk cut short (by the copy's end, or by
 * a frame larger than a copy holds) from one that reached the end.
 */
static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind_state *uw = arg;
	const struct stallcap_sample_view *v = uw->cur;
	const struct sc_copies *x = uw->cur_copies;
	const struct sc_run *is = x ? &x->istack : NULL;
	bool past = false, past_is = false, ignored = false;
	unsigned int i;

	if (copy_read(v->stack, v->stack_start, v->stack_size, addr, result, &past))
		return true;
	if (is && is->size && copy_read(is->bytes, is->start, is->size, addr, result, &past_is))
		return true;
	for (i = 0; x && i < x->nr_more; i++)
		if (copy_read(x->more[i].bytes, x->more[i].start, x->more[i].size, addr,
			      result, &ignored))
			return true;
	uw->read_failed = true;
	uw->fail_addr = addr;	/* the last: the return address after the others */
	/* with both copies, past the first is the handler's stack's top: not cut */
	uw->fail_past = is && is->size ? past_is : past;
	return false;
}

/* The sample's registers, or its caller's (uw->entry_ret: after a return) */
static bool uw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwind_state *uw = arg;
	Dwarf_Word regs[17];

	dwarf_regs(stallcap_sample_regs_x86_64(uw->cur), regs);
	if (uw->entry_ret) {
		regs[7] += sizeof(__u64);	/* rsp: the return address popped */
		regs[16] = uw->entry_ret;	/* rip */
	}
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks uw_callbacks = {
	.next_thread = uw_next_thread,
	.get_thread = uw_get_thread,
	.memory_read = uw_memory_read,
	.set_initial_registers = uw_set_initial_registers,
};

struct frames_ctx {
	__u64 *pcs;
	bool *is_return;
	int n, max;
	Dwarf_Word last_sp;
	bool last_sp_known;
};

/*
 * No progress: a frame with its caller's pc and stack pointer.  The pc
 * alone repeats in any recursion (each level returns to the same call
 * site, from a deeper stack).  Without the stack pointer (libdw before
 * 0.188 has no dwfl_frame_reg()), only the frame limit stops a loop.
 */
static bool no_progress(struct frames_ctx *c, Dwfl_Frame *state, Dwarf_Addr pc, bool act)
{
	bool same = c->n && pc == c->pcs[c->n - 1] && !act;
#if _ELFUTILS_VERSION >= 188
	Dwarf_Word sp;
	bool known = dwfl_frame_reg(state, 7, &sp) == 0;	/* DWARF 7: rsp */

	same = same && known && c->last_sp_known && sp == c->last_sp;
	c->last_sp = sp;
	c->last_sp_known = known;
#else
	same = false;
#endif
	return same;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct frames_ctx *c = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act) || !pc)
		return DWARF_CB_ABORT;
	if (no_progress(c, state, pc, act))
		return DWARF_CB_ABORT;
	c->pcs[c->n] = pc;
	c->is_return[c->n] = !act;
	return ++c->n < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * Why a DWARF walk of @n frames (the last at @pc) that returned @ret ended.
 * Return: true when that last "frame" is none: its pc, a word libdw took
 * for a return address, is in no code (a stack switch DWARF does not
 * describe, as Go's runtime.mcall to its g0 stack): the caller drops it.
 */
static bool dwarf_stop(const struct unwind_state *uw, const struct sc_proc *p, __u64 pc,
		       int ret, int n, int max, struct unwind_stop *stop)
{
	int err;

	if (n > 1 && n < max && ret != 1 && p && !sc_proc_is_text(p, pc)) {
		/* libdw's fallback guesses from there read anything at all */
		stop->end = UNWIND_END_ERROR;
		snprintf(stop->msg, sizeof(stop->msg),
			 "the return address read next, 0x%llx, is in no code the process mapped",
			 (unsigned long long)pc);
		return true;
	} else if (uw->read_failed && ret != 1 && n < max) {
		/*
		 * A word that no copy holds: a register saved there is lost,
		 * and the walk ends at that frame or the next (libdw takes a
		 * frame it cannot read for the outermost: ret 0).
		 */
		stop->end = uw->fail_past ? UNWIND_END_COPY : UNWIND_END_OUTSIDE;
		stop->addr = uw->fail_addr;
	} else if (ret == 0) {
		stop->end = UNWIND_END_OUTERMOST;
	} else if (ret < 0 && n < max && (err = dwfl_errno()) != 0) {
		stop->end = UNWIND_END_ERROR;
		snprintf(stop->msg, sizeof(stop->msg), "libdw: %s", dwfl_errmsg(err));
	}
	return false;
}

/* BEAM's function header in its perf map: "$Module:Function/Arity-CodeInfoPrologue" */
#define BEAM_PROLOGUE	"-CodeInfoPrologue"

/*
 * A sample at the first instruction of a function that a JIT named in its
 * perf map, or in BEAM's header of one (its last bytes the entry that calls
 * and tail calls jump to, the rest run only to raise function_clause): the
 * function has pushed nothing yet, its return address is the word at the
 * stack pointer and rbp still its caller's frame pointer.  The frame-pointer
 * walk skips the caller there, and libdw, without CFI for the code, falls
 * back to that walk (BEAM: a sample at a tail-recursive loop's entry lost
 * the function that called the loop; a JVM's compiled method, V8's function
 * the same at +0x0).  Return: that return address when it is in mapped
 * code, else 0.
 */
static __u64 jit_entry_return(struct usyms *u, const struct stallcap_sample_view *v,
			      const struct stallcap_regs_x86_64 *regs)
{
	const struct sc_proc *p = usyms_proc(u, v->s.pid);
	const char *name;
	Dwarf_Word ret;
	bool past;
	__u64 off;

	if (!p || !sc_proc_is_jit(p, regs->ip))
		return 0;
	name = perfmap_lookup(v->s.pid, regs->ip, &off);
	if (!name || (off && !str_ends_with(name, BEAM_PROLOGUE)))
		return 0;
	if (!copy_read(v->stack, v->stack_start, v->stack_size, regs->sp, &ret, &past))
		return 0;
	return sc_proc_is_text(p, ret) ? ret : 0;
}

/**
 * unwind_dwarf() - unwind a sample's user stack copy
 * @stop: UNWIND_END_OUTERMOST when the unwinder reached the outermost frame,
 *	UNWIND_END_COPY when it stopped for want of bytes past the copy's end,
 *	UNWIND_END_OUTSIDE for want of a word farther away than a copy
 *	holds (or below the stack pointer), UNWIND_END_ERROR when the last
 *	frame's pc is in no mapped code (that "frame" is left out) or libdw
 *	failed (the message says which); else UNWIND_END_STOPPED
 *
 * Returns the number of frames, or a negative errno.
 */
int unwind_dwarf(struct usyms *u, const struct stallcap_sample_view *v,
		 const struct sc_copies *x, __u64 *pcs, bool *is_return, int max,
		 struct unwind_stop *stop)
{
	struct unwind_state *uw = usyms_unwind_state(u, v->s.pid);
	struct frames_ctx c = { .pcs = pcs, .is_return = is_return, .max = max };
	int ret, entry = 0;

	const struct stallcap_regs_x86_64 *regs = stallcap_sample_regs_x86_64(v);

	memset(stop, 0, sizeof(*stop));
	if (!uw || !v->stack_size || !regs || !regs->sp || max <= 0)
		return -ENOENT;
	if (!uw->attached) {
		uw->cur = v;
		if (!dwfl_attach_state(uw->dwfl, NULL, (pid_t)v->s.pid, &uw_callbacks, uw))
			return -ENOEXEC;
		uw->attached = true;
	}
	uw->cur = v;
	uw->cur_copies = x;
	uw->read_failed = false;
	/* at a JIT function's entry: frame 0 here, libdw goes on from its caller */
	uw->entry_ret = max > 1 ? jit_entry_return(u, v, regs) : 0;
	if (uw->entry_ret) {
		pcs[0] = regs->ip;
		is_return[0] = false;
		entry = 1;
		c.pcs++;
		c.is_return++;
		c.max--;
	}
	dwfl_errno();		/* clears libdw's last error */
	ret = dwfl_getthread_frames(uw->dwfl, (pid_t)v->s.tid, frame_cb, &c);
	if (entry && c.n)
		is_return[1] = true;	/* libdw's frame 0 is the caller's return address */
	c.n += entry;
	if (dwarf_stop(uw, usyms_proc(u, v->s.pid), c.n ? pcs[c.n - 1] : 0, ret, c.n, max,
		       stop))
		c.n--;
	uw->cur = NULL;
	uw->cur_copies = NULL;
	uw->entry_ret = 0;
	return c.n;
}

/* Bytes of @x's copies. */
__u32 sc_copies_bytes(const struct sc_copies *x)
{
	__u32 n = x->istack.size;
	unsigned int i;

	for (i = 0; i < x->nr_more; i++)
		n += x->more[i].size;
	return n;
}

static void set_frame(struct sc_frame *f, __u64 addr, bool is_return, __u8 method)
{
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->is_return = is_return;
	f->method = method;
}

/* The frame-pointer walk up to its first address outside executable memory. */
static int fp_frames(struct usyms *u, const struct stallcap_sample_view *v,
		     struct sc_frame *out, int max)
{
	const struct sc_proc *p = usyms_proc(u, v->s.pid);
	unsigned int i;
	int n = 0;

	for (i = 0; i < v->nr_user && n < max; i++) {
		if (p && !sc_proc_is_text(p, v->user_ips[i]))
			break;
		set_frame(&out[n++], v->user_ips[i], i > 0, SC_METHOD_FP);
	}
	return n;
}

/**
 * unwind_user() - the user frames of a sample, each labelled with its method
 * @x: the sample's other copies, or NULL: the stack a signal handler on the
 *	alternate signal stack interrupted (STALLCAP_SEC_INTERRUPTED_STACK),
 *	the resident runs past a gap (STALLCAP_SEC_USER_STACK_MORE): DWARF
 *	reads them too
 * @flags: UNWIND_NO_DWARF to use the frame-pointer walk only
 * @stop: output (may be NULL): why the frames end: as unwind_dwarf() says
 *	when they are DWARF's (UNWIND_END_COPY, _OUTSIDE, _ERROR: a walk cut
 *	short; UNWIND_END_OUTERMOST: a whole one), UNWIND_END_STOPPED when
 *	the frame-pointer walk gave the last of them
 *
 * Frames are not symbolized here.  Returns the number of frames.
 */
int unwind_user(struct usyms *u, const struct stallcap_sample_view *v,
		const struct sc_copies *x, unsigned int flags, struct sc_frame *out,
		int max, struct unwind_stop *stop)
{
	__u64 pcs[STALLCAP_MAX_FRAMES];
	bool ret_addr[STALLCAP_MAX_FRAMES];
	struct unwind_stop dstop, ignored;
	int nfp, nd, i, j, n, seen;
	bool complete;

	if (!stop)
		stop = &ignored;
	memset(stop, 0, sizeof(*stop));
	nfp = fp_frames(u, v, out, max);
	if ((flags & UNWIND_NO_DWARF) || !v->stack_size)
		return nfp;
	if (max > STALLCAP_MAX_FRAMES)
		max = STALLCAP_MAX_FRAMES;
	nd = unwind_dwarf(u, v, x, pcs, ret_addr, max, &dstop);
	/* one frame is DWARF's own word only when it says why the walk ends there */
	if (nd < 1 || (nd == 1 && dstop.end != UNWIND_END_ERROR))
		return nfp;
	complete = dstop.end == UNWIND_END_OUTERMOST;
	/*
	 * Continue with the fp walk past the last frame DWARF found: the fp
	 * frame with its address, as many times over (in a recursion every
	 * level returns to one address).
	 */
	for (i = 1, seen = 0; i < nd; i++)
		seen += pcs[i] == pcs[nd - 1];
	for (j = 1; j < nfp; j++)
		if (v->user_ips[j] == pcs[nd - 1] && --seen <= 0)
			break;
	n = nd + (!complete && j < nfp ? nfp - j - 1 : 0);
	if (n > max)
		n = max;
	if (!complete && n < nfp)
		return nfp;
	if (n == nd)
		*stop = dstop;
	for (i = 0; i < nd; i++) {
		set_frame(&out[i], pcs[i], ret_addr[i], SC_METHOD_DWARF);
		/*
		 * libdw gives an exact pc (not a return address) beyond frame
		 * 0 for the signal return trampoline and for the frame the
		 * signal interrupted, right after it: the first of two such.
		 */
		out[i].signal_frame = i && i + 1 < nd && !ret_addr[i] && !ret_addr[i + 1];
	}
	for (j++; i < n; i++, j++)
		set_frame(&out[i], v->user_ips[j], true, SC_METHOD_FP);
	return n;
}
