// SPDX-License-Identifier: GPL-2.0
//
// A tokio HTTP server for attach_tokio_test.sh: two runtime workers; a
// request for /busy runs 300 ms of CPU inside its task (spin_for, called
// from handle_busy), the way a blocking computation in async code stalls a
// worker and every task queued behind it.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[inline(never)]
fn spin_for(ms: u64) -> u64 {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut x: u64 = 1;
    while Instant::now() < end {
        for _ in 0..10000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
    }
    x
}

#[inline(never)]
fn handle_busy() -> u64 {
    // std::hint::black_box is newer than Debian 12's rustc (1.63)
    unsafe { std::ptr::read_volatile(&spin_for(300)) }
}

#[tokio::main(worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8091".into());
    let listener = TcpListener::bind(addr).await?;
    println!("listening");
    loop {
        let (mut s, _) = listener.accept().await?;
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).await.unwrap_or(0);
            if buf[..n].starts_with(b"GET /busy") {
                handle_busy();
            }
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nok\n").await;
        });
    }
}
