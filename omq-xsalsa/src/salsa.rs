//! Salsa20/20, HSalsa20 and the XSalsa20 stream, several blocks at a time.
//!
//! A state of N blocks is 16 words × N lanes: `x[w][lane]`. Every step of a round is the same
//! operation on all lanes, a loop the compiler turns into vector instructions (N = 8: AVX2,
//! N = 4: SSE2 or NEON). Blocks differ only in their counter words.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// "expand 32-byte k", as the four diagonal words.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Little-endian words of a 32-byte key.
pub(crate) fn words(key: &[u8; 32]) -> [u32; 8] {
    let mut k = [0u32; 8];
    for (w, b) in k.iter_mut().zip(key.chunks_exact(4)) {
        *w = u32::from_le_bytes(b.try_into().expect("4 bytes"));
    }
    k
}

/// The 16-word input block: constants, key, then `n` (the nonce, or counter words) at 6..10.
fn input(key: &[u32; 8], n: [u32; 4]) -> [u32; 16] {
    [
        SIGMA[0], key[0], key[1], key[2], key[3], SIGMA[1], n[0], n[1], n[2], n[3], SIGMA[2],
        key[4], key[5], key[6], key[7], SIGMA[3],
    ]
}

#[inline(always)]
fn quarter<const N: usize>(x: &mut [[u32; N]; 16], a: usize, b: usize, c: usize, d: usize) {
    for l in 0..N {
        x[b][l] ^= x[a][l].wrapping_add(x[d][l]).rotate_left(7);
    }
    for l in 0..N {
        x[c][l] ^= x[b][l].wrapping_add(x[a][l]).rotate_left(9);
    }
    for l in 0..N {
        x[d][l] ^= x[c][l].wrapping_add(x[b][l]).rotate_left(13);
    }
    for l in 0..N {
        x[a][l] ^= x[d][l].wrapping_add(x[c][l]).rotate_left(18);
    }
}

/// Salsa20's 20 rounds on N states at once (no feed-forward).
#[inline(always)]
fn rounds<const N: usize>(x: &mut [[u32; N]; 16]) {
    for _ in 0..10 {
        quarter(x, 0, 4, 8, 12);
        quarter(x, 5, 9, 13, 1);
        quarter(x, 10, 14, 2, 6);
        quarter(x, 15, 3, 7, 11);
        quarter(x, 0, 1, 2, 3);
        quarter(x, 5, 6, 7, 4);
        quarter(x, 10, 11, 8, 9);
        quarter(x, 15, 12, 13, 14);
    }
}

/// Keystream blocks `ctr .. ctr + N` of `input` (whose words 8 and 9 are replaced by the
/// counter), as words: `x[w][lane]`.
#[inline(always)]
fn blocks<const N: usize>(input: &[u32; 16], ctr: u64) -> [[u32; N]; 16] {
    let mut x = [[0u32; N]; 16];
    for (w, row) in x.iter_mut().enumerate() {
        *row = [input[w]; N];
    }
    for l in 0..N {
        let c = ctr.wrapping_add(l as u64);
        x[8][l] = c as u32;
        x[9][l] = (c >> 32) as u32;
    }
    let start = x;
    rounds(&mut x);
    for w in 0..16 {
        for l in 0..N {
            x[w][l] = x[w][l].wrapping_add(start[w][l]);
        }
    }
    x
}

/// XORs `data` (at most N blocks) with the keystream from block `ctr` on.
#[inline(always)]
fn xor_chunk<const N: usize>(input: &[u32; 16], ctr: u64, data: &mut [u8]) {
    let ks = blocks::<N>(input, ctr);
    let mut words = data.chunks_exact_mut(4);
    for (j, b) in (&mut words).enumerate() {
        let k = ks[j % 16][j / 16];
        let v = u32::from_le_bytes((&*b).try_into().expect("4 bytes")) ^ k;
        b.copy_from_slice(&v.to_le_bytes());
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        // The partial word's index; `data` is at most N blocks, so it is in range.
        let j = data.len() / 4;
        let k = ks[j % 16][j / 16].to_le_bytes();
        let at = data.len() - data.len() % 4;
        for (i, b) in data[at..].iter_mut().enumerate() {
            *b ^= k[i];
        }
    }
}

/// XORs `data` with the keystream from block `ctr` on, N blocks at a time; a tail of one
/// block runs one lane wide.
#[inline(always)]
fn xor_lanes<const N: usize>(input: &[u32; 16], mut ctr: u64, data: &mut [u8]) {
    let mut chunks = data.chunks_exact_mut(64 * N);
    for c in &mut chunks {
        xor_chunk::<N>(input, ctr, c);
        ctr = ctr.wrapping_add(N as u64);
    }
    let rest = chunks.into_remainder();
    if rest.len() > 64 * 4 {
        xor_chunk::<N>(input, ctr, rest);
    } else if rest.len() > 64 {
        xor_chunk::<4>(input, ctr, rest);
    } else if !rest.is_empty() {
        xor_chunk::<1>(input, ctr, rest);
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
mod avx2 {
    /// Eight lanes, compiled for AVX2: the lane loops become 256-bit instructions.
    #[target_feature(enable = "avx2")]
    pub(super) fn xor(input: &[u32; 16], ctr: u64, data: &mut [u8]) {
        super::xor_lanes::<8>(input, ctr, data);
    }
}

/// XORs `data` with the keystream from block `ctr` on.
fn xor_blocks(input: &[u32; 16], ctr: u64, data: &mut [u8]) {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    if data.len() > 64 * 4 && std::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: `avx2::xor` only needs the CPU to support AVX2, which was just checked; it
        // is otherwise ordinary safe code.
        unsafe {
            avx2::xor(input, ctr, data);
        }
        return;
    }
    xor_lanes::<4>(input, ctr, data);
}

/// HSalsa20 on key words: the 32-byte subkey of XSalsa20 (and NaCl's `crypto_box_beforenm`).
pub(crate) fn hsalsa20_words(key: &[u32; 8], n: &[u8; 16]) -> [u32; 8] {
    let mut nw = [0u32; 4];
    for (w, b) in nw.iter_mut().zip(n.chunks_exact(4)) {
        *w = u32::from_le_bytes(b.try_into().expect("4 bytes"));
    }
    let mut x = [[0u32; 1]; 16];
    for (row, v) in x.iter_mut().zip(input(key, nw)) {
        *row = [v];
    }
    rounds(&mut x);
    let out = [
        x[0][0], x[5][0], x[10][0], x[15][0], x[6][0], x[7][0], x[8][0], x[9][0],
    ];
    x.zeroize();
    out
}

/// HSalsa20(key, input): the first stage of XSalsa20, and NaCl's key derivation from an
/// X25519 shared secret (with an all-zero input).
pub fn hsalsa20(key: &[u8; 32], n: &[u8; 16]) -> [u8; 32] {
    let mut k = words(key);
    let mut w = hsalsa20_words(&k, n);
    k.zeroize();
    let mut out = [0u8; 32];
    for (b, v) in out.chunks_exact_mut(4).zip(w) {
        b.copy_from_slice(&v.to_le_bytes());
    }
    w.zeroize();
    out
}

/// The Salsa20 stream of one XSalsa20 nonce, past its first 32 bytes (the Poly1305 key).
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct Stream {
    input: [u32; 16],
    /// Bytes 32..64 of block 0.
    first: [u8; 32],
}

impl Stream {
    /// The stream of subkey `key` and the last 8 nonce bytes; and the Poly1305 key.
    pub(crate) fn new(mut key: [u32; 8], n8: [u8; 8]) -> (Stream, [u8; 32]) {
        let n = [
            u32::from_le_bytes(n8[..4].try_into().expect("4 bytes")),
            u32::from_le_bytes(n8[4..].try_into().expect("4 bytes")),
            0,
            0,
        ];
        let input = input(&key, n);
        key.zeroize();
        let mut b0 = blocks::<1>(&input, 0);
        let mut poly_key = [0u8; 32];
        let mut first = [0u8; 32];
        for w in 0..8 {
            poly_key[w * 4..w * 4 + 4].copy_from_slice(&b0[w][0].to_le_bytes());
            first[w * 4..w * 4 + 4].copy_from_slice(&b0[w + 8][0].to_le_bytes());
        }
        b0.zeroize();
        (Stream { input, first }, poly_key)
    }

    /// XORs `data` with the stream.
    pub(crate) fn xor(&self, data: &mut [u8]) {
        let head = data.len().min(32);
        for (d, k) in data[..head].iter_mut().zip(&self.first) {
            *d ^= k;
        }
        if data.len() > 32 {
            xor_blocks(&self.input, 1, &mut data[32..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane width gives the same stream as one block at a time, at every length and
    /// start counter (the AVX2 copy is checked by tests/ when the CPU has AVX2).
    #[test]
    fn lane_widths_agree() {
        let input = input(&[0x0102_0304; 8], [9, 8, 0, 0]);
        for len in 0..1100 {
            for ctr in [1u64, u32::MAX as u64] {
                let mut one = vec![0x33u8; len];
                for (i, c) in one.chunks_mut(64).enumerate() {
                    xor_chunk::<1>(&input, ctr + i as u64, c);
                }
                let mut four = vec![0x33u8; len];
                xor_lanes::<4>(&input, ctr, &mut four);
                let mut eight = vec![0x33u8; len];
                xor_lanes::<8>(&input, ctr, &mut eight);
                assert_eq!(one, four, "len {len}");
                assert_eq!(one, eight, "len {len}");
            }
        }
    }
}
