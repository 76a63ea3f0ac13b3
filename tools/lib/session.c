// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: sessions, configuration, counters and the watch calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int scl_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static int session_new(struct stallcap_session **sp, int fd)
{
	struct stallcap_session *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->fd = fd;
	pthread_mutex_init(&s->map_lock, NULL);
	pthread_mutex_init(&s->ring_lock, NULL);
	*sp = s;
	return 0;
}

static int env_fd(void)
{
	const char *v = getenv(STALLCAP_FD_ENV);
	char *end;
	long fd;

	if (!v || !*v)
		return -ENOENT;
	fd = strtol(v, &end, 10);
	if (*end || fd < 0 || fd > 1 << 20 || fcntl((int)fd, F_GETFD) < 0)
		return -EBADF;
	return (int)fd;
}

int stallcap_session_open(struct stallcap_session **sp,
			  const struct stallcap_config *cfg, unsigned int flags)
{
	int fd, ret;

	if (!sp || (flags & ~(STALLCAP_OPEN_ENV | STALLCAP_OPEN_NOOP)))
		return -EINVAL;
	if (flags & STALLCAP_OPEN_ENV) {
		fd = env_fd();
		if (fd >= 0) {
			/* not passed on to what this program executes */
			if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
				return -errno;
			fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			if (fd < 0)
				return -errno;
			ret = session_new(sp, fd);
			if (ret)
				close(fd);
			return ret;
		}
		if (fd != -ENOENT)
			return fd;
	}
	fd = open(STALLCAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (flags & STALLCAP_OPEN_NOOP) &&
	    (errno == ENOENT || errno == ENODEV || errno == ENXIO)) {
		ret = session_new(sp, -1);
		if (!ret)
			(*sp)->noop = 1;
		return ret;
	}
	if (fd < 0)
		return -errno;
	if (cfg) {
		ret = scl_ioctl(fd, STALLCAP_IOC_SET_CONFIG, (void *)cfg);
		if (ret < 0) {
			close(fd);
			return ret;
		}
	}
	ret = session_new(sp, fd);
	if (ret)
		close(fd);
	return ret;
}

int stallcap_session_adopt(struct stallcap_session **sp, int fd)
{
	if (!sp || fd < 0)
		return -EINVAL;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return session_new(sp, fd);
}

void stallcap_session_close(struct stallcap_session *s)
{
	if (!s)
		return;
	if (s->ring_map)
		munmap(s->ring_map, s->ring_len);
	if (s->slots)
		munmap(s->slots, s->slots_len);
	stallcap_reporter_free(s->reporter);
	if (s->fd >= 0)
		close(s->fd);
	free(s->ring_buf.buf);
	pthread_mutex_destroy(&s->map_lock);
	pthread_mutex_destroy(&s->ring_lock);
	free(s);
}

int stallcap_session_fd(const struct stallcap_session *s)
{
	return s && !s->noop ? s->fd : -EINVAL;
}

int stallcap_session_is_noop(const struct stallcap_session *s)
{
	return s && s->noop;
}

int stallcap_session_set_config(struct stallcap_session *s,
				const struct stallcap_config *cfg)
{
	if (!s || !cfg)
		return -EINVAL;
	if (s->noop)
		return 0;
	return scl_ioctl(s->fd, STALLCAP_IOC_SET_CONFIG, (void *)cfg);
}

int stallcap_session_get_config(struct stallcap_session *s, struct stallcap_config *cfg)
{
	if (!s || !cfg)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_GET_CONFIG, cfg);
}

int stallcap_session_get_info(struct stallcap_session *s, struct stallcap_info *info)
{
	if (!s || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_GET_INFO, info);
}

int stallcap_session_get_stats(struct stallcap_session *s, struct stallcap_stats *st,
			       unsigned int flags)
{
	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->flags = flags;
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_GET_STATS, st);
}

int stallcap_watch_arm(struct stallcap_session *s, __u64 timeout_ns, __u64 user_tag,
		       unsigned int flags)
{
	struct stallcap_arm arm = {
		.size = sizeof(arm),
		.flags = flags,
		.timeout_ns = timeout_ns,
		.user_tag = user_tag,
	};

	if (!s || (flags & (STALLCAP_ARM_HEARTBEAT | STALLCAP_ARM_SHARED_DEADLINE)))
		return -EINVAL;
	if (s->noop)
		return 0;
	return scl_ioctl(s->fd, STALLCAP_IOC_ARM, &arm);
}

int stallcap_watch_rearm(struct stallcap_session *s, __u64 timeout_ns)
{
	if (!s)
		return -EINVAL;
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_REARM,
				       (void *)(unsigned long)timeout_ns);
}

int stallcap_watch_disarm(struct stallcap_session *s)
{
	if (!s)
		return -EINVAL;
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_DISARM, NULL);
}

int stallcap_watch_release(struct stallcap_session *s)
{
	if (!s)
		return -EINVAL;
	return s->noop ? 0 : scl_ioctl(s->fd, STALLCAP_IOC_RELEASE, NULL);
}
