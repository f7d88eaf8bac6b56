//! Salsa20/20, HSalsa20 and the XSalsa20 stream, several blocks at a time.
//!
//! A state of N blocks is 16 words × N lanes: `x[w][lane]`. Every step of a round is the same
//! operation on all lanes, a loop the compiler turns into vector instructions (N = 8: AVX2,
//! N = 4: SSE2 or NEON). Blocks differ only in their counter words.

// The lane loops index several rows with one lane number; that is the point of them.
#![allow(clippy::needless_range_loop)]

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

/// Salsa20's 20 rounds on one state, without the feed-forward.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn rounds1(x: [u32; 16]) -> [u32; 16] {
    #[allow(unsafe_code)]
    // SAFETY: `sse2::rounds` needs SSE2, which this build enables for every CPU it runs on
    // (`cfg(target_feature = "sse2")`, part of the x86-64 baseline).
    unsafe {
        sse2::rounds(x)
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn rounds1(x: [u32; 16]) -> [u32; 16] {
    let mut l = [[0u32; 1]; 16];
    for (a, b) in l.iter_mut().zip(x) {
        *a = [b];
    }
    rounds(&mut l);
    l.map(|w| w[0])
}

/// Keystream block `ctr` of `input`.
fn block(input: &[u32; 16], ctr: u64) -> [u32; 16] {
    let mut x = *input;
    x[8] = ctr as u32;
    x[9] = (ctr >> 32) as u32;
    let mut out = rounds1(x);
    for (o, i) in out.iter_mut().zip(x) {
        *o = o.wrapping_add(i);
    }
    out
}

/// One block in four SSE2 registers (every x86-64 has SSE2), a diagonal of the state in each,
/// so each quarter-round step is one vector operation for the four quarters of a round.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_or_si128, _mm_setr_epi32, _mm_shuffle_epi32,
        _mm_slli_epi32, _mm_srli_epi32, _mm_xor_si128,
    };

    macro_rules! step {
        ($t:ident, $a:ident, $b:ident, $r:literal) => {{
            let s = _mm_add_epi32($a, $b);
            $t = _mm_xor_si128(
                $t,
                _mm_or_si128(_mm_slli_epi32::<$r>(s), _mm_srli_epi32::<{ 32 - $r }>(s)),
            );
        }};
    }

    #[target_feature(enable = "sse2")]
    fn lanes(v: __m128i) -> [u32; 4] {
        [
            _mm_cvtsi128_si32(v) as u32,
            _mm_cvtsi128_si32(_mm_shuffle_epi32::<0x39>(v)) as u32,
            _mm_cvtsi128_si32(_mm_shuffle_epi32::<0x4e>(v)) as u32,
            _mm_cvtsi128_si32(_mm_shuffle_epi32::<0x93>(v)) as u32,
        ]
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn rounds(x: [u32; 16]) -> [u32; 16] {
        let w = |i: usize| x[i] as i32;
        // Diagonals: a = (x0, x5, x10, x15), b = (x4, x9, x14, x3), c = (x8, x13, x2, x7),
        // d = (x12, x1, x6, x11); lane i of a, b, c, d is the i-th column quarter.
        let mut a = _mm_setr_epi32(w(0), w(5), w(10), w(15));
        let mut b = _mm_setr_epi32(w(4), w(9), w(14), w(3));
        let mut c = _mm_setr_epi32(w(8), w(13), w(2), w(7));
        let mut d = _mm_setr_epi32(w(12), w(1), w(6), w(11));
        for _ in 0..10 {
            // Column round.
            step!(b, a, d, 7);
            step!(c, b, a, 9);
            step!(d, c, b, 13);
            step!(a, d, c, 18);
            // Row round: the rows' second, third and fourth words are d, c, b rotated.
            let mut rb = _mm_shuffle_epi32::<0x39>(d); // (x1, x6, x11, x12)
            let mut rc = _mm_shuffle_epi32::<0x4e>(c); // (x2, x7, x8, x13)
            let mut rd = _mm_shuffle_epi32::<0x93>(b); // (x3, x4, x9, x14)
            step!(rb, a, rd, 7);
            step!(rc, rb, a, 9);
            step!(rd, rc, rb, 13);
            step!(a, rd, rc, 18);
            d = _mm_shuffle_epi32::<0x93>(rb);
            c = _mm_shuffle_epi32::<0x4e>(rc);
            b = _mm_shuffle_epi32::<0x39>(rd);
        }
        let [x0, x5, x10, x15] = lanes(a);
        let [x4, x9, x14, x3] = lanes(b);
        let [x8, x13, x2, x7] = lanes(c);
        let [x12, x1, x6, x11] = lanes(d);
        [
            x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15,
        ]
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
        xor_one(input, ctr, rest);
    }
}

/// XORs `data` (at most one block) with keystream block `ctr`.
fn xor_one(input: &[u32; 16], ctr: u64, data: &mut [u8]) {
    let ks = block(input, ctr);
    let mut bytes = [0u8; 64];
    for (b, w) in bytes.chunks_exact_mut(4).zip(ks) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    for (d, k) in data.iter_mut().zip(bytes) {
        *d ^= k;
    }
}

/// A left rotation of each 32-bit lane: two shifts and an OR in AVX2.
#[cfg(target_arch = "x86_64")]
macro_rules! rotl_shift {
    ($s:expr, $r:literal) => {
        core::arch::x86_64::_mm256_or_si256(
            core::arch::x86_64::_mm256_slli_epi32::<$r>($s),
            core::arch::x86_64::_mm256_srli_epi32::<{ 32 - $r }>($s),
        )
    };
}

/// A left rotation of each 32-bit lane: one `vprold` with AVX-512F and VL.
#[cfg(target_arch = "x86_64")]
macro_rules! rotl_vl {
    ($s:expr, $r:literal) => {
        core::arch::x86_64::_mm256_rol_epi32::<$r>($s)
    };
}

/// One quarter-round step on rows of eight lanes: `x[t] ^= (x[a] + x[b]) <<< r`.
#[cfg(target_arch = "x86_64")]
macro_rules! step8 {
    ($rot:ident, $x:ident, $t:expr, $a:expr, $b:expr, $r:literal) => {{
        let s = core::arch::x86_64::_mm256_add_epi32($x[$a], $x[$b]);
        $x[$t] = core::arch::x86_64::_mm256_xor_si256($x[$t], $rot!(s, $r));
    }};
}

#[cfg(target_arch = "x86_64")]
macro_rules! quarter8 {
    ($rot:ident, $x:ident, $a:expr, $b:expr, $c:expr, $d:expr) => {
        step8!($rot, $x, $b, $a, $d, 7);
        step8!($rot, $x, $c, $b, $a, 9);
        step8!($rot, $x, $d, $c, $b, 13);
        step8!($rot, $x, $a, $d, $c, 18);
    };
}

/// One quarter-round step on diagonals (the two-block code): `t ^= (p + q) <<< r`.
#[cfg(target_arch = "x86_64")]
macro_rules! st2 {
    ($rot:ident, $t:ident, $p:ident, $q:ident, $r:literal) => {{
        let s = core::arch::x86_64::_mm256_add_epi32($p, $q);
        $t = core::arch::x86_64::_mm256_xor_si256($t, $rot!(s, $r));
    }};
}

/// The 256-bit Salsa20 code, compiled once for AVX2 and once more for AVX-512VL, where a
/// rotation is one instruction instead of three (`$rot`).
#[cfg(target_arch = "x86_64")]
macro_rules! simd_salsa {
    ($features:literal, $rot:ident) => {
        use core::arch::x86_64::{
            __m256i, _mm256_add_epi32, _mm256_loadu_si256, _mm256_permute2x128_si256,
            _mm256_set1_epi32, _mm256_setr_epi32, _mm256_storeu_si256, _mm256_unpackhi_epi32,
            _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_xor_si256,
        };

        /// Rows `x[at..at + 8]` (a word each, one lane per block) as eight 32-byte halves of
        /// blocks 0..8.
        #[target_feature(enable = $features)]
        fn transpose(x: &[__m256i; 16], at: usize) -> [__m256i; 8] {
            let t0 = _mm256_unpacklo_epi32(x[at], x[at + 1]);
            let t1 = _mm256_unpackhi_epi32(x[at], x[at + 1]);
            let t2 = _mm256_unpacklo_epi32(x[at + 2], x[at + 3]);
            let t3 = _mm256_unpackhi_epi32(x[at + 2], x[at + 3]);
            let t4 = _mm256_unpacklo_epi32(x[at + 4], x[at + 5]);
            let t5 = _mm256_unpackhi_epi32(x[at + 4], x[at + 5]);
            let t6 = _mm256_unpacklo_epi32(x[at + 6], x[at + 7]);
            let t7 = _mm256_unpackhi_epi32(x[at + 6], x[at + 7]);
            let u0 = _mm256_unpacklo_epi64(t0, t2);
            let u1 = _mm256_unpackhi_epi64(t0, t2);
            let u2 = _mm256_unpacklo_epi64(t1, t3);
            let u3 = _mm256_unpackhi_epi64(t1, t3);
            let u4 = _mm256_unpacklo_epi64(t4, t6);
            let u5 = _mm256_unpackhi_epi64(t4, t6);
            let u6 = _mm256_unpacklo_epi64(t5, t7);
            let u7 = _mm256_unpackhi_epi64(t5, t7);
            [
                _mm256_permute2x128_si256::<0x20>(u0, u4),
                _mm256_permute2x128_si256::<0x20>(u1, u5),
                _mm256_permute2x128_si256::<0x20>(u2, u6),
                _mm256_permute2x128_si256::<0x20>(u3, u7),
                _mm256_permute2x128_si256::<0x31>(u0, u4),
                _mm256_permute2x128_si256::<0x31>(u1, u5),
                _mm256_permute2x128_si256::<0x31>(u2, u6),
                _mm256_permute2x128_si256::<0x31>(u3, u7),
            ]
        }

        /// XORs 512 bytes with keystream blocks `ctr .. ctr + 8`.
        #[target_feature(enable = $features)]
        fn xor8(input: &[u32; 16], ctr: u64, data: &mut [u8; 512]) {
            let mut x = [_mm256_set1_epi32(0); 16];
            for (v, &w) in x.iter_mut().zip(input) {
                *v = _mm256_set1_epi32(w as i32);
            }
            let c = |l: u64| ctr.wrapping_add(l);
            let lo = |l: u64| c(l) as u32 as i32;
            let hi = |l: u64| (c(l) >> 32) as u32 as i32;
            x[8] = _mm256_setr_epi32(lo(0), lo(1), lo(2), lo(3), lo(4), lo(5), lo(6), lo(7));
            x[9] = _mm256_setr_epi32(hi(0), hi(1), hi(2), hi(3), hi(4), hi(5), hi(6), hi(7));
            let start = x;
            for _ in 0..10 {
                quarter8!($rot, x, 0, 4, 8, 12);
                quarter8!($rot, x, 5, 9, 13, 1);
                quarter8!($rot, x, 10, 14, 2, 6);
                quarter8!($rot, x, 15, 3, 7, 11);
                quarter8!($rot, x, 0, 1, 2, 3);
                quarter8!($rot, x, 5, 6, 7, 4);
                quarter8!($rot, x, 10, 11, 8, 9);
                quarter8!($rot, x, 15, 12, 13, 14);
            }
            for (v, s) in x.iter_mut().zip(start) {
                *v = _mm256_add_epi32(*v, s);
            }
            let first = transpose(&x, 0);
            let second = transpose(&x, 8);
            for (half, ks) in data
                .chunks_exact_mut(32)
                .zip(first.iter().zip(&second).flat_map(|(a, b)| [*a, *b]))
            {
                let p = half.as_mut_ptr().cast::<__m256i>();
                #[allow(unsafe_code)]
                // SAFETY: `half` is 32 writable bytes (chunks_exact_mut(32)), exactly one unaligned
                // 256-bit load and store; the features are enabled in this function.
                unsafe {
                    _mm256_storeu_si256(p, _mm256_xor_si256(_mm256_loadu_si256(p), ks));
                }
            }
        }

        /// Keystream blocks `ctr` and `ctr + 1` as 128 bytes (little-endian words), one block in
        /// each 128-bit half, in the diagonal layout of the SSE2 one-block code: two blocks for
        /// the instructions of one. The state goes into diagonals and comes back out in rows with
        /// `vpblendd`, the same lanes in both halves.
        #[target_feature(enable = $features)]
        pub(super) fn two_blocks(input: &[u32; 16], ctr: u64) -> [u64; 16] {
            use core::arch::x86_64::{_mm256_blend_epi32, _mm256_shuffle_epi32};
            let c1 = ctr.wrapping_add(1);
            let w = |i: usize| input[i] as i32;
            let row = |i: usize| {
                _mm256_setr_epi32(
                    w(i),
                    w(i + 1),
                    w(i + 2),
                    w(i + 3),
                    w(i),
                    w(i + 1),
                    w(i + 2),
                    w(i + 3),
                )
            };
            let rows = [
                row(0),
                row(4),
                _mm256_setr_epi32(
                    ctr as u32 as i32,
                    (ctr >> 32) as u32 as i32,
                    w(10),
                    w(11),
                    c1 as u32 as i32,
                    (c1 >> 32) as u32 as i32,
                    w(10),
                    w(11),
                ),
                row(12),
            ];
            // Lane j of `v[k]` for lane j: k, k + 1, k + 2, k + 3 (mod 4) from lanes 0, 1, 2, 3.
            let gather = |v: &[__m256i; 4], k: usize| {
                let t = _mm256_blend_epi32::<0x22>(v[k % 4], v[(k + 1) % 4]);
                let t = _mm256_blend_epi32::<0x44>(t, v[(k + 2) % 4]);
                _mm256_blend_epi32::<0x88>(t, v[(k + 3) % 4])
            };
            // Diagonal k holds words (4k, 4k + 5, 4k + 10, 4k + 15) mod 16.
            let start = [
                gather(&rows, 0),
                gather(&rows, 1),
                gather(&rows, 2),
                gather(&rows, 3),
            ];
            let [mut a, mut b, mut c, mut d] = start;
            for _ in 0..10 {
                st2!($rot, b, a, d, 7);
                st2!($rot, c, b, a, 9);
                st2!($rot, d, c, b, 13);
                st2!($rot, a, d, c, 18);
                let mut rb = _mm256_shuffle_epi32::<0x39>(d);
                let mut rc = _mm256_shuffle_epi32::<0x4e>(c);
                let mut rd = _mm256_shuffle_epi32::<0x93>(b);
                st2!($rot, rb, a, rd, 7);
                st2!($rot, rc, rb, a, 9);
                st2!($rot, rd, rc, rb, 13);
                st2!($rot, a, rd, rc, 18);
                d = _mm256_shuffle_epi32::<0x93>(rb);
                c = _mm256_shuffle_epi32::<0x4e>(rc);
                b = _mm256_shuffle_epi32::<0x39>(rd);
            }
            let diag = [
                _mm256_add_epi32(a, start[0]),
                _mm256_add_epi32(b, start[1]),
                _mm256_add_epi32(c, start[2]),
                _mm256_add_epi32(d, start[3]),
            ];
            // Row i, lane j, is in diagonal i - j (mod 4): gathering from k = i, i + 3, i + 2, ...
            // is gathering from i, i - 1, i - 2, i - 3.
            let back = [diag[0], diag[3], diag[2], diag[1]];
            let row_of = |i: usize| gather(&back, (4 - i) % 4);
            let (r0, r1, r2, r3) = (row_of(0), row_of(1), row_of(2), row_of(3));
            let mut out = [0u64; 16];
            let p = out.as_mut_ptr().cast::<__m256i>();
            #[allow(unsafe_code)]
            // SAFETY: `out` is 128 writable bytes: four unaligned 32-byte stores at 0, 32, 64 and
            // 96 bytes. the features are enabled in this function.
            unsafe {
                _mm256_storeu_si256(p, _mm256_permute2x128_si256::<0x20>(r0, r1));
                _mm256_storeu_si256(p.add(1), _mm256_permute2x128_si256::<0x20>(r2, r3));
                _mm256_storeu_si256(p.add(2), _mm256_permute2x128_si256::<0x31>(r0, r1));
                _mm256_storeu_si256(p.add(3), _mm256_permute2x128_si256::<0x31>(r2, r3));
            }
            out
        }

        /// XORs `data` with the keystream from block `ctr` on, eight blocks at a time.
        #[target_feature(enable = $features)]
        pub(super) fn xor(input: &[u32; 16], mut ctr: u64, data: &mut [u8]) {
            let mut chunks = data.chunks_exact_mut(512);
            for c in &mut chunks {
                xor8(input, ctr, c.try_into().expect("512 bytes"));
                ctr = ctr.wrapping_add(8);
            }
            let rest = chunks.into_remainder();
            if rest.len() > 64 * 4 {
                let mut buf = [0u8; 512];
                buf[..rest.len()].copy_from_slice(rest);
                xor8(input, ctr, &mut buf);
                rest.copy_from_slice(&buf[..rest.len()]);
            } else if !rest.is_empty() {
                super::xor_lanes::<4>(input, ctr, rest);
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Eight blocks in the eight 32-bit lanes of AVX2 registers, written with intrinsics: the
    //! compiler's own vectorisation of the lane loops spills and shuffles more.
    simd_salsa!("avx2", rotl_shift);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The AVX2 code with AVX-512VL's rotation (`vprold`), still on 256-bit registers: the
    //! rounds take 3 instructions a step instead of 5.
    simd_salsa!("avx2,avx512f,avx512vl", rotl_vl);

    use core::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_loadu_si512, _mm512_rol_epi32, _mm512_set1_epi32,
        _mm512_shuffle_i32x4, _mm512_storeu_si512, _mm512_unpackhi_epi32, _mm512_unpackhi_epi64,
        _mm512_unpacklo_epi32, _mm512_unpacklo_epi64, _mm512_xor_si512,
    };

    /// One quarter-round step on rows of sixteen lanes: `x[t] ^= (x[a] + x[b]) <<< r`.
    macro_rules! step16 {
        ($x:ident, $t:expr, $a:expr, $b:expr, $r:literal) => {{
            let s = _mm512_add_epi32($x[$a], $x[$b]);
            $x[$t] = _mm512_xor_si512($x[$t], _mm512_rol_epi32::<$r>(s));
        }};
    }

    macro_rules! quarter16 {
        ($x:ident, $a:expr, $b:expr, $c:expr, $d:expr) => {
            step16!($x, $b, $a, $d, 7);
            step16!($x, $c, $b, $a, 9);
            step16!($x, $d, $c, $b, 13);
            step16!($x, $a, $d, $c, 18);
        };
    }

    /// XORs 1,024 bytes with keystream blocks `ctr .. ctr + 16`, a block in each 32-bit lane
    /// of 512-bit registers: half the instructions a byte of [`xor8`], where the CPU runs
    /// 512-bit operations at full width (Intel's server cores; AMD's Zen 4 splits them in two,
    /// which costs nothing over the 256-bit code).
    #[target_feature(enable = "avx512f")]
    fn xor16(input: &[u32; 16], ctr: u64, data: &mut [u8; 1024]) {
        let mut x = [_mm512_set1_epi32(0); 16];
        for (v, &w) in x.iter_mut().zip(input) {
            *v = _mm512_set1_epi32(w as i32);
        }
        let mut lo = [0u32; 16];
        let mut hi = [0u32; 16];
        for l in 0..16 {
            let c = ctr.wrapping_add(l as u64);
            lo[l] = c as u32;
            hi[l] = (c >> 32) as u32;
        }
        #[allow(unsafe_code)]
        // SAFETY: `lo` and `hi` are 64 readable bytes each: one unaligned 512-bit load each;
        // AVX-512F is enabled in this function.
        unsafe {
            x[8] = _mm512_loadu_si512(lo.as_ptr().cast());
            x[9] = _mm512_loadu_si512(hi.as_ptr().cast());
        }
        let start = x;
        for _ in 0..10 {
            quarter16!(x, 0, 4, 8, 12);
            quarter16!(x, 5, 9, 13, 1);
            quarter16!(x, 10, 14, 2, 6);
            quarter16!(x, 15, 3, 7, 11);
            quarter16!(x, 0, 1, 2, 3);
            quarter16!(x, 5, 6, 7, 4);
            quarter16!(x, 10, 11, 8, 9);
            quarter16!(x, 15, 12, 13, 14);
        }
        for (v, s) in x.iter_mut().zip(start) {
            *v = _mm512_add_epi32(*v, s);
        }
        // Transpose: row w lane b (word w of block b) to block b's 64 bytes. Pairs of rows
        // interleave by words, then by word pairs: in 128-bit lane k of `u[4i + j]` are words
        // 4i..4i + 4 of block 4k + j.
        let mut t = [_mm512_set1_epi32(0); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_epi32(x[2 * i], x[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(x[2 * i], x[2 * i + 1]);
        }
        let mut u = [_mm512_set1_epi32(0); 16];
        for i in 0..4 {
            u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
            u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
        }
        // Then the 128-bit lanes of u[j], u[4 + j], u[8 + j], u[12 + j] are transposed as a
        // 4 × 4 matrix: output k is block 4k + j.
        for j in 0..4 {
            let v0 = _mm512_shuffle_i32x4::<0x44>(u[j], u[4 + j]);
            let v1 = _mm512_shuffle_i32x4::<0xee>(u[j], u[4 + j]);
            let v2 = _mm512_shuffle_i32x4::<0x44>(u[8 + j], u[12 + j]);
            let v3 = _mm512_shuffle_i32x4::<0xee>(u[8 + j], u[12 + j]);
            let blocks = [
                _mm512_shuffle_i32x4::<0x88>(v0, v2),
                _mm512_shuffle_i32x4::<0xdd>(v0, v2),
                _mm512_shuffle_i32x4::<0x88>(v1, v3),
                _mm512_shuffle_i32x4::<0xdd>(v1, v3),
            ];
            for (k, ks) in blocks.into_iter().enumerate() {
                let at = (4 * k + j) * 64;
                let p = data[at..at + 64].as_mut_ptr().cast::<__m512i>();
                #[allow(unsafe_code)]
                // SAFETY: `p` points at 64 writable bytes of `data` (the slice above): one
                // unaligned 512-bit load and store; AVX-512F is enabled in this function.
                unsafe {
                    _mm512_storeu_si512(p, _mm512_xor_si512(_mm512_loadu_si512(p), ks));
                }
            }
        }
    }

    /// XORs `data` with the keystream from block `ctr` on: sixteen blocks at a time, a rest
    /// of more than eight blocks through a buffer of sixteen (one pass of the rounds, not
    /// two), and a shorter one with the 256-bit code.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) fn xor_wide(input: &[u32; 16], mut ctr: u64, data: &mut [u8]) {
        let mut chunks = data.chunks_exact_mut(1024);
        for c in &mut chunks {
            xor16(input, ctr, c.try_into().expect("1,024 bytes"));
            ctr = ctr.wrapping_add(16);
        }
        let rest = chunks.into_remainder();
        if rest.len() > 512 {
            let mut buf = [0u8; 1024];
            buf[..rest.len()].copy_from_slice(rest);
            xor16(input, ctr, &mut buf);
            rest.copy_from_slice(&buf[..rest.len()]);
        } else {
            xor(input, ctr, rest);
        }
    }
}

/// Whether the AVX-512VL copy of the 256-bit code can run (AVX-512F and VL); checked at run
/// time like AVX2, and cached by the standard library.
#[cfg(target_arch = "x86_64")]
fn has_avx512vl() -> bool {
    std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
}

/// XORs `data` with the keystream from block `ctr` on.
fn xor_blocks(input: &[u32; 16], ctr: u64, data: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if data.len() > 64 * 4 && std::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: `avx512::xor` needs AVX2, AVX-512F and AVX-512VL, `avx2::xor` only AVX2;
        // each runs only after the CPU was seen to support its features. Otherwise they are
        // ordinary safe code.
        unsafe {
            if has_avx512vl() {
                avx512::xor_wide(input, ctr, data);
            } else {
                avx2::xor(input, ctr, data);
            }
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
    let mut i = input(key, nw);
    let mut x = rounds1(i);
    let out = [x[0], x[5], x[10], x[15], x[6], x[7], x[8], x[9]];
    x.zeroize();
    i.zeroize();
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
/// Kept in words, not bytes: wiping it is one volatile store per word.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct Stream {
    input: [u32; 16],
    /// Keystream from byte 32 on, as little-endian words: the rest of block 0, and block 1
    /// when it was made with block 0 (a box of at most 96 bytes, on AVX2).
    head: [u64; 12],
    /// How many bytes of `head` hold keystream: 32 or 96.
    head_len: usize,
}

impl Stream {
    /// The stream of subkey `key` and the last 8 nonce bytes; and the Poly1305 key (the
    /// stream's first 32 bytes, as little-endian words).
    /// `len` is the length of the data the stream will cover.
    pub(crate) fn new(mut key: [u32; 8], n8: [u8; 8], len: usize) -> (Stream, [u64; 4]) {
        let n = [
            u32::from_le_bytes(n8[..4].try_into().expect("4 bytes")),
            u32::from_le_bytes(n8[4..].try_into().expect("4 bytes")),
            0,
            0,
        ];
        let input = input(&key, n);
        key.zeroize();
        let mut ks = [0u64; 16];
        let mut head_len = 32;
        #[cfg(target_arch = "x86_64")]
        let two = len > 32 && len <= 96 && std::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let two = {
            let _ = len;
            false
        };
        if two {
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            // SAFETY: `avx2::two_blocks` only needs AVX2, which was just detected;
            // `avx512::two_blocks` AVX-512F and VL besides, detected by `has_avx512vl`.
            {
                ks = unsafe {
                    if has_avx512vl() {
                        avx512::two_blocks(&input, 0)
                    } else {
                        avx2::two_blocks(&input, 0)
                    }
                };
            }
            head_len = 96;
        } else {
            let mut b0 = block(&input, 0);
            for (k, w) in ks.iter_mut().zip(b0.chunks_exact(2)) {
                *k = u64::from(w[0]) | u64::from(w[1]) << 32;
            }
            b0.zeroize();
        }
        let mut poly_key = [0u64; 4];
        poly_key.copy_from_slice(&ks[..4]);
        let mut head = [0u64; 12];
        head.copy_from_slice(&ks[4..]);
        ks.zeroize();
        (
            Stream {
                input,
                head,
                head_len,
            },
            poly_key,
        )
    }

    /// XORs `data` with the stream.
    pub(crate) fn xor(&self, data: &mut [u8]) {
        let n = data.len().min(self.head_len);
        let (head, rest) = data.split_at_mut(n);
        let mut words = head.chunks_exact_mut(8);
        for (d, k) in (&mut words).zip(&self.head) {
            let x = u64::from_le_bytes((&*d).try_into().expect("8 bytes")) ^ k;
            d.copy_from_slice(&x.to_le_bytes());
        }
        let tail = words.into_remainder();
        if !tail.is_empty() {
            let k = self.head[n / 8].to_le_bytes();
            for (d, k) in tail.iter_mut().zip(k) {
                *d ^= k;
            }
        }
        if !rest.is_empty() {
            // The stream goes on with the block after those in `head`.
            xor_blocks(&self.input, (32 + self.head_len as u64) / 64, rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane width gives the same stream as one block at a time, at every length and
    /// start counter (the AVX2 copy is checked by tests/ when the CPU has AVX2).
    #[test]
    fn one_block_matches_the_lane_code() {
        for ctr in [0u64, 1, 77, u32::MAX as u64] {
            let input = input(&[ctr as u32 ^ 0x5555_0101; 8], [3, 1, 4, 1]);
            let lanes = blocks::<1>(&input, ctr);
            assert_eq!(block(&input, ctr), lanes.map(|w| w[0]));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn two_blocks_match_one_at_a_time() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        for ctr in [0u64, 1, u32::MAX as u64, u64::MAX] {
            let input = input(&[ctr as u32 ^ 0x0a0b_0c0d; 8], [2, 7, 1, 8]);
            #[allow(unsafe_code)]
            // SAFETY: AVX2 was just detected.
            let two = unsafe { avx2::two_blocks(&input, ctr) };
            let one_at_a_time: Vec<u32> =
                [block(&input, ctr), block(&input, ctr.wrapping_add(1))].concat();
            let words = |two: [u64; 16]| -> Vec<u32> {
                two.iter()
                    .flat_map(|k| [*k as u32, (k >> 32) as u32])
                    .collect()
            };
            assert_eq!(words(two), one_at_a_time, "AVX2, counter {ctr}");
            if has_avx512vl() {
                #[allow(unsafe_code)]
                // SAFETY: AVX2, AVX-512F and VL were just detected.
                let two = unsafe { avx512::two_blocks(&input, ctr) };
                assert_eq!(words(two), one_at_a_time, "AVX-512VL, counter {ctr}");
            }
        }
    }

    #[test]
    fn lane_widths_agree() {
        let input = input(&[0x0102_0304; 8], [9, 8, 0, 0]);
        for len in 0..2200 {
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
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    let mut simd = vec![0x33u8; len];
                    #[allow(unsafe_code)]
                    // SAFETY: AVX2 was just detected.
                    unsafe {
                        avx2::xor(&input, ctr, &mut simd)
                    };
                    assert_eq!(one, simd, "AVX2, len {len}");
                }
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") && has_avx512vl() {
                    let mut simd = vec![0x33u8; len];
                    #[allow(unsafe_code)]
                    // SAFETY: AVX2, AVX-512F and VL were just detected.
                    unsafe {
                        avx512::xor(&input, ctr, &mut simd)
                    };
                    assert_eq!(one, simd, "AVX-512VL, len {len}");
                    let mut wide = vec![0x33u8; len];
                    #[allow(unsafe_code)]
                    // SAFETY: AVX2, AVX-512F and VL were just detected.
                    unsafe {
                        avx512::xor_wide(&input, ctr, &mut wide)
                    };
                    assert_eq!(one, wide, "AVX-512F 16 lanes, len {len}");
                }
            }
        }
    }
}
