// SPDX-License-Identifier: GPL-2.0
/*
 * A program that spins in a known function under a known call chain:
 * main -> fixture_level1 -> fixture_level2 -> fixture_spin.
 *
 * Host tests build it with and without frame pointers, run it with no
 * argument (it prints its functions' addresses, then spins until killed),
 * stop it with ptrace and unwind the stack they copy.  With FIXTURE_RECURSE=N
 * in its environment main calls fixture_recurse N levels deep first (N
 * frames of one function, all but the innermost returning to one address);
 * with FIXTURE_SIGNAL=1 it spins inside a SIGUSR1 handler that main raised
 * (the kernel's signal frame between the handler and raise()); with
 * FIXTURE_CLOCK=1 it reads the clock in a loop (clock_gettime(): the vDSO);
 * with FIXTURE_BIG_FRAME=1 main calls fixture_level1 from under a frame of
 * 96 KiB (fixture_big_frame()), with FIXTURE_BIG_FRAME=huge of 1.25 MiB;
 * with FIXTURE_JIT=fp or =rbp fixture_jit_level1 calls fixture_level2 through
 * code made at run time, as a JIT's (fixture_jit_call()), which keeps a
 * frame pointer (fp) or uses rbp as a general register (rbp), and names it
 * in a perf map in the directory $FIXTURE_JIT_MAPS; with FIXTURE_JIT=chain
 * through two such functions, the outer one a stack's bottom (its frame
 * record holds no caller, as an Erlang process's first frame); with
 * FIXTURE_JIT=entry it calls code that spins at its first instruction.
 *
 * Built with -DFIXTURE_STALLCAP (stallcap-spin-nofp, stallcap-exit-early) it
 * arms a deadline through libstallcap and spins past it:
 *   fixture [SPIN_MS [DEADLINE_MS]]     (defaults 300 and 20)
 * then exits at once, so that a report made later finds the process gone;
 * with FIXTURE_SIGNAL=1 it spins in a SIGUSR1 handler as above, with
 * FIXTURE_SIGNAL=alt in one that runs on an alternate signal stack
 * (sigaltstack(2), SA_ONSTACK); with FIXTURE_BIG_FRAME=1 (=huge) it spins
 * under a frame of 96 KiB (1.25 MiB); with FIXTURE_SLEEP=1 fixture_spin
 * sleeps the time instead (a blocked thread: its user stack is read as it
 * returns to user space); with FIXTURE_IN_KERNEL=1 it spends the time in
 * system calls that run on the CPU (read() of /dev/zero, 4 MiB each); with
 * FIXTURE_UNLINK_SELF=1 it first deletes its own binary (a server upgraded
 * in place); with FIXTURE_BREAK_RING=1 it
 * writes a ring tail past the head (a program that shares the session and
 * damages the ring its reader reads).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef FIXTURE_STALLCAP
#include <sys/mman.h>
#include <unistd.h>
#endif

#ifdef FIXTURE_STALLCAP
#include <fcntl.h>
#include <unistd.h>
#include <stallcap/stallcap.h>
#endif

#define NOIPA __attribute__((noipa, used))

volatile unsigned long fixture_sink;

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static bool fixture_sleeps;	/* FIXTURE_SLEEP */
static int fixture_zero_fd = -1;	/* FIXTURE_IN_KERNEL: /dev/zero */
static char *fixture_zero_buf;		/* its reads' buffer, resident */
#define FIXTURE_ZERO_BYTES	(4 << 20)

/*
 * Spin until the time (0: forever); no call inside the hot loop.  With
 * FIXTURE_SLEEP, sleep until then instead; with FIXTURE_IN_KERNEL, read
 * /dev/zero until then.
 */
NOIPA void fixture_spin(unsigned long long until_ns)
{
	struct timespec ts = {
		.tv_sec = until_ns / 1000000000ULL,
		.tv_nsec = until_ns % 1000000000ULL,
	};
	unsigned long i;

	if (fixture_sleeps) {
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		return;
	}
	if (fixture_zero_fd >= 0) {
		while ((!until_ns || mono_ns() < until_ns) &&
		       read(fixture_zero_fd, fixture_zero_buf, FIXTURE_ZERO_BYTES) > 0)
			;
		return;
	}
	for (;;) {
		for (i = 0; i < (1UL << 16); i++)
			fixture_sink += i;
		if (until_ns && mono_ns() >= until_ns)
			break;
	}
}

NOIPA void fixture_level2(unsigned long long until_ns)
{
	fixture_spin(until_ns);
	fixture_sink++;		/* not a tail call: keep this frame */
}

NOIPA void fixture_level1(unsigned long long until_ns)
{
	fixture_level2(until_ns);
	fixture_sink++;
}

static unsigned long long fixture_until_ns;	/* of the signal handler */

/*
 * fixture_level1 under a frame of 96 KiB (a parser's buffer on the stack,
 * as unbound's): only its lowest bytes written, the pages above them never
 * touched.  Its return address lies farther from the stack pointer than a
 * stack copy holds (64 KiB).
 */
NOIPA void fixture_big_frame(unsigned long long until_ns)
{
	volatile char buf[96 * 1024];

	buf[0] = 1;
	fixture_level1(until_ns);
	fixture_sink += buf[0];
}

/* The same under 1.25 MiB: farther than any copy reaches (1 MiB). */
NOIPA void fixture_huge_frame(unsigned long long until_ns)
{
	volatile char buf[1280 * 1024];

	buf[0] = 1;
	fixture_level1(until_ns);
	fixture_sink += buf[0];
}

/* FIXTURE_BIG_FRAME: "huge" for fixture_huge_frame(), else the 96 KiB one */
static void under_big_frame(const char *how, unsigned long long until_ns)
{
	if (!strcmp(how, "huge"))
		fixture_huge_frame(until_ns);
	else
		fixture_big_frame(until_ns);
}

NOIPA void fixture_on_signal(int sig)
{
	fixture_level1(fixture_until_ns);
	fixture_sink++;
}

#ifdef FIXTURE_STALLCAP
/* Spin in a SIGUSR1 handler, on an alternate signal stack if @how is "alt" */
static void spin_in_handler(const char *how)
{
	static char altstack[64 * 1024];
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fixture_on_signal;
	if (!strcmp(how, "alt")) {
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };

		if (sigaltstack(&ss, NULL))
			perror("fixture: sigaltstack");
		sa.sa_flags = SA_ONSTACK;
	}
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
}

int main(int argc, char **argv)
{
	unsigned long long spin_ms = argc > 1 ? strtoull(argv[1], NULL, 0) : 300;
	unsigned long long deadline_ms = argc > 2 ? strtoull(argv[2], NULL, 0) : 20;
	const char *sig = getenv("FIXTURE_SIGNAL");
	struct stallcap_session *s;
	char self[4096];
	ssize_t n;
	int ret;

	n = getenv("FIXTURE_UNLINK_SELF") ?
	    readlink("/proc/self/exe", self, sizeof(self) - 1) : -1;
	if (n > 0) {
		self[n] = 0;
		if (unlink(self))
			perror("fixture: unlink");
	}

	ret = stallcap_session_open(&s, NULL, STALLCAP_OPEN_ENV);
	if (ret) {
		fprintf(stderr, "fixture: open: %s\n", strerror(-ret));
		return 1;
	}
	if (getenv("FIXTURE_BREAK_RING")) {
		struct stallcap_ring_ctl *ctl;

		ret = stallcap_ring_map(s);
		if (ret) {
			fprintf(stderr, "fixture: map: %s\n", strerror(-ret));
			return 1;
		}
		ctl = stallcap_session_ring(s)->ctl;
		__atomic_store_n(&ctl->data_tail, ctl->data_head + 8, __ATOMIC_RELEASE);
	}
	if (getenv("FIXTURE_IN_KERNEL")) {
		fixture_zero_buf = malloc(FIXTURE_ZERO_BYTES);
		fixture_zero_fd = open("/dev/zero", O_RDONLY);
		if (!fixture_zero_buf || fixture_zero_fd < 0) {
			perror("fixture: /dev/zero");
			return 1;
		}
		memset(fixture_zero_buf, 1, FIXTURE_ZERO_BYTES);
	}
	ret = stallcap_watch_arm(s, deadline_ms * 1000000ULL, 0x5717, 0);
	if (ret) {
		fprintf(stderr, "fixture: arm: %s\n", strerror(-ret));
		return 1;
	}
	fixture_until_ns = mono_ns() + spin_ms * 1000000ULL;
	fixture_sleeps = getenv("FIXTURE_SLEEP");
	if (sig)
		spin_in_handler(sig);
	else if (getenv("FIXTURE_BIG_FRAME"))
		under_big_frame(getenv("FIXTURE_BIG_FRAME"), fixture_until_ns);
	else
		fixture_level1(fixture_until_ns);
	stallcap_watch_release(s);
	stallcap_session_close(s);
	return 0;
}
#else
/* @depth frames of this function above fixture_level1 (not tail calls) */
NOIPA void fixture_recurse(unsigned int depth, unsigned long long until_ns)
{
	if (depth > 1)
		fixture_recurse(depth - 1, until_ns);
	else
		fixture_level1(until_ns);
	fixture_sink++;
}

/*
 * jit(arg, fn): fn(arg) called from code in an anonymous executable mapping,
 * which no file describes (no symbol, no CFI): as a JIT's compiled method
 * calling into the runtime.  Its callers are found only through rbp.  The
 * "fp" code keeps a frame pointer there (push %rbp; mov %rsp,%rbp), as a
 * JVM with -XX:+PreserveFramePointer does; the "rbp" code saves rbp and puts
 * a loop bound in it (0x2718), as compiled Java may.
 */
static const unsigned char jit_fp_code[] = {
	0x55,				/* push %rbp */
	0x48, 0x89, 0xe5,		/* mov %rsp,%rbp */
	0xff, 0xd6,			/* call *%rsi */
	0x5d,				/* pop %rbp */
	0xc3,				/* ret */
};
static const unsigned char jit_rbp_code[] = {
	0x55,					/* push %rbp */
	0x48, 0xc7, 0xc5, 0x18, 0x27, 0x00, 0x00,	/* mov $0x2718,%rbp */
	0xff, 0xd6,				/* call *%rsi */
	0x5d,					/* pop %rbp */
	0xc3,					/* ret */
};

/*
 * jit_bottom(arg, fn, inner): inner(arg, fn) under a frame record of no
 * caller (saved rbp 0, return address 0): the bottom of the chain.
 */
static const unsigned char jit_bottom_code[] = {
	0x55,				/* push %rbp */
	0x6a, 0x00,			/* push $0 */
	0x6a, 0x00,			/* push $0 */
	0x48, 0x89, 0xe5,		/* mov %rsp,%rbp */
	0xff, 0xd2,			/* call *%rdx */
	0x48, 0x83, 0xc4, 0x10,		/* add $16,%rsp */
	0x5d,				/* pop %rbp */
	0xc3,				/* ret */
};

/* jit_entry(): spins at its first instruction, before it pushes anything */
static const unsigned char jit_entry_code[] = {
	0xeb, 0xfe,			/* jmp . */
};

#define JIT_INNER_OFFSET	64	/* of the called code, after jit_bottom's */

typedef void (*jit_fn)(unsigned long long until_ns, void (*fn)(unsigned long long),
		       const void *inner);
static jit_fn fixture_jit_call;
static const void *fixture_jit_inner;

static void jit_name(FILE *f, const unsigned char *at, size_t len, const char *name)
{
	fprintf(f, "%lx %zx Interpreted:JitThunk.%s\n", (unsigned long)at, len, name);
}

/* Make the code for FIXTURE_JIT @how and name it in @dir/perf-PID.map. */
static void jit_make(const char *how, const char *dir)
{
	bool rbp = !strcmp(how, "rbp"), chain = !strcmp(how, "chain");
	bool entry = !strcmp(how, "entry");
	const unsigned char *code = rbp ? jit_rbp_code : entry ? jit_entry_code : jit_fp_code;
	size_t len = rbp ? sizeof(jit_rbp_code) :
		     entry ? sizeof(jit_entry_code) : sizeof(jit_fp_code);
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[4096];
	FILE *f;

	if (mem == MAP_FAILED) {
		perror("fixture: jit");
		exit(1);
	}
	memcpy(mem, jit_bottom_code, sizeof(jit_bottom_code));
	memcpy(mem + JIT_INNER_OFFSET, code, len);
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC)) {
		perror("fixture: jit");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir ? dir : "/tmp", (int)getpid());
	f = fopen(path, "w");
	if (f) {
		if (chain)
			jit_name(f, mem, sizeof(jit_bottom_code), "bottom");
		jit_name(f, mem + JIT_INNER_OFFSET, len,
			 rbp ? "callrbp" : entry ? "callentry" : "callfp");
		fclose(f);
	}
	fixture_jit_inner = mem + JIT_INNER_OFFSET;
	fixture_jit_call = (jit_fn)(chain ? mem : mem + JIT_INNER_OFFSET);
}

NOIPA void fixture_jit_level1(unsigned long long until_ns)
{
	fixture_jit_call(until_ns, fixture_level2, fixture_jit_inner);
	fixture_sink++;
}

/* Read the clock forever: the pc mostly in the vDSO */
NOIPA void fixture_spin_clock(void)
{
	for (;;)
		fixture_sink += mono_ns();
}

int main(void)
{
	const char *depth = getenv("FIXTURE_RECURSE");
	const char *jit = getenv("FIXTURE_JIT");

	printf("fixture_spin=%p fixture_level2=%p fixture_level1=%p main=%p\n",
	       (void *)fixture_spin, (void *)fixture_level2, (void *)fixture_level1,
	       (void *)main);
	if (jit)
		jit_make(jit, getenv("FIXTURE_JIT_MAPS"));
	fflush(stdout);
	if (jit) {
		fixture_jit_level1(0);
	} else if (getenv("FIXTURE_CLOCK")) {
		fixture_spin_clock();
	} else if (getenv("FIXTURE_SIGNAL")) {
		signal(SIGUSR1, fixture_on_signal);
		raise(SIGUSR1);
	} else if (getenv("FIXTURE_BIG_FRAME")) {
		under_big_frame(getenv("FIXTURE_BIG_FRAME"), 0);
	} else if (depth)
		fixture_recurse((unsigned int)strtoul(depth, NULL, 0), 0);
	else
		fixture_level1(0);
	fixture_sink++;
	return 0;
}
#endif
