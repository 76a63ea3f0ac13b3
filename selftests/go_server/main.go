// SPDX-License-Identifier: GPL-2.0
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func spinFor(d time.Duration) uint64 {
	end := time.Now().Add(d)
	var x uint64
	for i := 0; ; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i%100000 == 0 && time.Now().After(end) {
			return x
		}
	}
}

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/spin", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		sink += spinFor(time.Duration(ms) * time.Millisecond)
		fmt.Fprintln(w, "spun")
	})
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
