// SPDX-License-Identifier: GPL-2.0
//
// A Rust program for rust_symbols_test: it prints the addresses of three of
// its functions (a plain one, a generic type's method, main) and waits to
// be read.  Built twice: with rustc's default symbol mangling (legacy, up
// to 1.63 at least) and with v0.

use std::io::Write;

// std::hint::black_box is newer than Debian 12's rustc (1.63)
fn black_box<T: Copy>(x: T) -> T {
    unsafe { std::ptr::read_volatile(&x) }
}

pub struct Ring<T> {
    slots: Vec<T>,
}

impl<T: Copy + Into<u64>> Ring<T> {
    #[inline(never)]
    pub fn poll(&self, budget: u64) -> u64 {
        let mut sum = 0u64;
        for i in 0..budget {
            sum = sum.wrapping_add(self.slots[(i as usize) % self.slots.len()].into());
        }
        black_box(sum)
    }
}

#[inline(never)]
pub fn spin_hot(n: u64) -> u64 {
    let mut x = n;
    for _ in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}

fn main() {
    let ring = Ring { slots: vec![1u32, 2, 3] };
    let poll: fn(&Ring<u32>, u64) -> u64 = Ring::<u32>::poll;
    let spin: fn(u64) -> u64 = spin_hot;
    let main_fn: fn() = main;
    black_box(ring.poll(black_box(3)));
    black_box(spin(black_box(3)));
    println!("spin={:x} poll={:x} main={:x}", spin as usize, poll as usize, main_fn as usize);
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(60));
}
