// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap-deadlock: an unmodified program (no libstallcap) whose two event
 * loops deadlock on demand, for the live guest test (tool_live_test.sh).
 *
 * Threads "locker-ab" and "locker-ba" wait in poll() (an event-loop wait, as
 * `stallcap --deadline` sees it) every 10 ms until the process gets SIGUSR1;
 * then each takes two mutexes in opposite orders in lock_pair(), both holding
 * their first when they ask for the second: they block in a futex wait
 * forever.  The program never ends by itself: kill it.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa, used))

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;
static atomic_int go;

/*
 * pthread_mutex_lock() through a function of our own: glibc is built
 * without frame pointers, so the frame-pointer walk of a blocked thread
 * (the module reads no raw stack of a thread off CPU for DWARF) skips the
 * direct caller of the libc function, here take(), not lock_pair().
 */
NOIPA void take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

/* take @first, wait until the other thread holds its first, take @second */
NOIPA void lock_pair(pthread_mutex_t *first, pthread_mutex_t *second)
{
	take(first);
	pthread_barrier_wait(&both_hold_one);
	take(second);		/* never returns */
	pthread_mutex_unlock(second);
	pthread_mutex_unlock(first);
}

static void *locker(void *arg)
{
	int ab = arg != NULL;

	pthread_setname_np(pthread_self(), ab ? "locker-ab" : "locker-ba");
	while (!atomic_load(&go))
		poll(NULL, 0, 10);
	if (ab)
		lock_pair(&lock_a, &lock_b);
	else
		lock_pair(&lock_b, &lock_a);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	sigset_t set;
	int sig;

	/* SIGUSR1 is taken by main alone, with sigwait() */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_barrier_init(&both_hold_one, NULL, 2);
	if (pthread_create(&t[0], NULL, locker, (void *)1) ||
	    pthread_create(&t[1], NULL, locker, NULL)) {
		perror("pthread_create");
		return 1;
	}
	printf("stallcap-deadlock: pid %d, SIGUSR1 to deadlock\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	atomic_store(&go, 1);
	pthread_join(t[0], NULL);	/* never */
	return 0;
}
