// SPDX-License-Identifier: GPL-2.0
module stallcap/goserver

go 1.19
