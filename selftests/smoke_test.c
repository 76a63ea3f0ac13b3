// SPDX-License-Identifier: GPL-2.0
/* The device exists and answers an unknown ioctl with ENOTTY. */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/stallcap.h>

#include "sc_harness.h"

TEST(device_opens)
{
	int fd = open(STALLCAP_DEVICE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, _IO(STALLCAP_IOC_MAGIC, 0x7f), 0));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

TEST_HARNESS_MAIN
