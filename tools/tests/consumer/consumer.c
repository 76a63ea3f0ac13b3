// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A consumer of the installed libstallcap: its headers compile, it links and
 * a library call answers as documented (no module needed).
 */
#include <errno.h>
#include <stdio.h>
#include <stallcap/stallcap.h>

int main(void)
{
	struct stallcap_ring ring;
	int ret = stallcap_ring_init(&ring, NULL, 0);

	if (ret != -EINVAL) {
		fprintf(stderr, "stallcap_ring_init(NULL) returned %d, not -EINVAL\n", ret);
		return 1;
	}
	printf("libstallcap ok (ABI %d)\n", STALLCAP_ABI_VERSION);
	return 0;
}
