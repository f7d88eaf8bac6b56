//! Poly1305 (RFC 8439 §2.5). The scalar code keeps h in base 2^64 (two 64-bit words and a
//! few bits above them) and multiplies by r's two 64-bit words: four 64×64→128-bit products a
//! block, where 44/44/42-bit limbs (poly1305-donna's 64-bit layout, used here until stop 35)
//! take nine. r's clamping clears the low two bits of its upper word, which is what lets the
//! products past 2^128 fold back with s1 = r1 + r1/4 (2^130 ≡ 5). Constant time: no branch or
//! index depends on the key or the message.

use zeroize::Zeroize;

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The Poly1305 tag of `msg` under the one-time `key` (r, then s).
pub fn poly1305(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let mut words = [0u64; 4];
    for (w, b) in words.iter_mut().zip(key.chunks_exact(8)) {
        *w = le64(b);
    }
    let tag = poly1305_words(&words, msg);
    words.zeroize();
    tag
}

/// h = h0 + h1·2^64 + h2·2^128, carried from `low` (bits 0..128) and `high` (2^128 and up),
/// with what lies at 2^130 and above folded back as × 5: h2 is at most 4 after it.
fn fold(low: u128, high: u64) -> (u64, u64, u64) {
    let t = (low & u128::from(u64::MAX)) + u128::from((high >> 2) * 5);
    let h0 = t as u64;
    let t = (low >> 64) + (t >> 64);
    (h0, t as u64, (high & 3) + (t >> 64) as u64)
}

/// How many blocks the vector code absorbs at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lanes {
    /// No vector code: the scalar loop only.
    One,
    /// AVX2.
    Four,
    /// AVX-512F.
    Eight,
}

impl Lanes {
    /// The widest this CPU runs (detected at run time; the standard library caches it).
    fn best() -> Lanes {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            return if std::is_x86_feature_detected!("avx512f") {
                Lanes::Eight
            } else {
                Lanes::Four
            };
        }
        Lanes::One
    }
}

/// [`poly1305`] with the key as four little-endian words (how the keystream holds it).
pub(crate) fn poly1305_words(key: &[u64; 4], msg: &[u8]) -> [u8; 16] {
    poly1305_lanes(key, msg, Lanes::best())
}

/// [`poly1305_words`] with the vector code of `lanes`, which the CPU must support.
fn poly1305_lanes(key: &[u64; 4], msg: &[u8], lanes: Lanes) -> [u8; 16] {
    let [t0, t1, key_s0, key_s1] = *key;
    // r, clamped.
    let r0 = t0 & 0x0fff_fffc_0fff_ffff;
    let r1 = t1 & 0x0fff_fffc_0fff_fffc;
    // r1·2^128 ≡ (r1/4)·5 (mod 2^130 - 5); exact because clamping cleared r1's low bits.
    let s1 = r1 + (r1 >> 2);
    let (mut h0, mut h1, mut h2) = (0u64, 0u64, 0u64);

    let mut msg = msg;
    #[cfg(target_arch = "x86_64")]
    if msg.len() >= 16 * 16 && lanes != Lanes::One {
        let (blocks, h) = if lanes == Lanes::Eight {
            let blocks = msg.len() / 128 * 8;
            #[allow(unsafe_code)]
            // SAFETY: `avx512::blocks` needs AVX-512F and AVX2, which `Lanes::best` saw (or
            // the test that chose `lanes` checked).
            let h = unsafe { avx512::blocks(r0, r1, &msg[..blocks * 16]) };
            (blocks, h)
        } else {
            let blocks = msg.len() / 64 * 4;
            #[allow(unsafe_code)]
            // SAFETY: `avx2::blocks` needs AVX2, which `Lanes::best` saw (or the test that
            // chose `lanes` checked).
            let h = unsafe { avx2::blocks(r0, r1, &msg[..blocks * 16]) };
            (blocks, h)
        };
        (h0, h1, h2) = (h[0], h[1], h[2]);
        msg = &msg[blocks * 16..];
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lanes;

    let mul = |a: u64, b: u64| u128::from(a) * u128::from(b);
    // Bounds: h0, h1 < 2^64, h2 < 10 (at most 7 from the vector code, 4 after a block, plus a
    // carry and the high bit), r0, r1 < 2^60, s1 < 1.25·2^60: d0 and d1 stay under 2^126, so
    // d1 >> 64 < 2^62 and d2 < 12·2^60; a2·s1 < 2^64.
    let mut block = |m: &[u8; 16], hibit: u64| {
        let t = u128::from(h0) + u128::from(le64(&m[0..]));
        let u = u128::from(h1) + u128::from(le64(&m[8..])) + (t >> 64);
        let (a0, a1, a2) = (t as u64, u as u64, h2 + (u >> 64) as u64 + hibit);
        let d0 = mul(a0, r0) + mul(a1, s1);
        let d1 = mul(a0, r1) + mul(a1, r0) + u128::from(a2 * s1) + (d0 >> 64);
        let d2 = a2 * r0 + (d1 >> 64) as u64;
        (h0, h1, h2) = fold((d0 & u128::from(u64::MAX)) | (d1 << 64), d2);
    };

    let mut chunks = msg.chunks_exact(16);
    for m in &mut chunks {
        block(m.try_into().expect("16 bytes"), 1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut m = [0u8; 16];
        m[..rest.len()].copy_from_slice(rest);
        m[rest.len()] = 1;
        block(&m, 0);
        m.zeroize();
    }

    // h < 5·2^128 < 2p after one more fold (the vector code's h2 may be up to 7).
    (h0, h1, h2) = fold(u128::from(h0) | u128::from(h1) << 64, h2);
    // g = h + 5: at or past 2^130 exactly when h >= p, and then g - 2^130 = h - p, whose low
    // 128 bits are g's.
    let t = u128::from(h0) + 5;
    let u = u128::from(h1) + (t >> 64);
    let g2 = h2 + (u >> 64) as u64;
    let g = u128::from(t as u64) | u128::from(u as u64) << 64;
    let take = 0u128.wrapping_sub(u128::from(g2 >> 2));
    let h = u128::from(h0) | u128::from(h1) << 64;
    let h = (h & !take) | (g & take);

    // h + s mod 2^128.
    let tag = h.wrapping_add(u128::from(key_s0) | u128::from(key_s1) << 64);
    tag.to_le_bytes()
}

/// Four blocks at a time, in four lanes of 26-bit limbs (Goll and Gueron's layout): lane j
/// takes blocks j, j + 4, j + 8... multiplied by r⁴ each step, and by r⁴⁻ʲ at the last, so the
/// lanes' sum is the Horner evaluation of all the blocks. AVX2 intrinsics: `vpmuludq` for the
/// 26×26-bit products, four lanes of 64 bits.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_extract_epi64, _mm256_loadu_si256,
        _mm256_or_si256, _mm256_set1_epi64x, _mm256_setr_epi64x, _mm256_setzero_si256,
        _mm256_slli_epi64, _mm256_srli_epi64, _mm256_unpackhi_epi64, _mm256_unpacklo_epi64,
    };

    const M26: u64 = (1 << 26) - 1;

    /// r in 26-bit limbs, from its two words.
    pub(super) fn limbs26(r0: u64, r1: u64) -> [u64; 5] {
        let v = u128::from(r0) | u128::from(r1) << 64;
        [
            (v as u64) & M26,
            ((v >> 26) as u64) & M26,
            ((v >> 52) as u64) & M26,
            ((v >> 78) as u64) & M26,
            ((v >> 104) as u64) & M26,
        ]
    }

    /// a × b mod 2^130 - 5, 26-bit limbs in and (carried) out.
    pub(super) fn mul(a: &[u64; 5], b: &[u64; 5]) -> [u64; 5] {
        let s = [0, b[1] * 5, b[2] * 5, b[3] * 5, b[4] * 5];
        let d = [
            a[0] * b[0] + a[1] * s[4] + a[2] * s[3] + a[3] * s[2] + a[4] * s[1],
            a[0] * b[1] + a[1] * b[0] + a[2] * s[4] + a[3] * s[3] + a[4] * s[2],
            a[0] * b[2] + a[1] * b[1] + a[2] * b[0] + a[3] * s[4] + a[4] * s[3],
            a[0] * b[3] + a[1] * b[2] + a[2] * b[1] + a[3] * b[0] + a[4] * s[4],
            a[0] * b[4] + a[1] * b[3] + a[2] * b[2] + a[3] * b[1] + a[4] * b[0],
        ];
        carry(d)
    }

    fn carry(mut d: [u64; 5]) -> [u64; 5] {
        let mut c;
        for i in 0..4 {
            c = d[i] >> 26;
            d[i] &= M26;
            d[i + 1] += c;
        }
        c = d[4] >> 26;
        d[4] &= M26;
        d[0] += c * 5;
        c = d[0] >> 26;
        d[0] &= M26;
        d[1] += c;
        d
    }

    /// `vpmuludq`: the low 32 bits of each 64-bit lane of `a` times those of `b`, in 64 bits,
    /// which is what `_mm256_mul_epu32` means. Written as the one instruction because LLVM
    /// keeps the intrinsic's 32-bit masks apart from the product: the masks of the powers of r,
    /// which do not change, are hoisted out of the loop, and the product left inside, no longer
    /// seeing them, becomes a full 64-bit lane multiply (three `vpmuludq` and four shifts and
    /// adds): the loop took about 250 instructions per 64 bytes instead of about 100.
    #[cfg(not(miri))]
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mul32(a: __m256i, b: __m256i) -> __m256i {
        let d;
        #[allow(unsafe_code)]
        // SAFETY: `vpmuludq` reads two vector registers and writes a third; it touches no
        // memory, stack or flags, as the options say. AVX2 is enabled in this function.
        unsafe {
            core::arch::asm!(
                "vpmuludq {d}, {a}, {b}",
                a = in(ymm_reg) a,
                b = in(ymm_reg) b,
                d = lateout(ymm_reg) d,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        d
    }

    /// Miri cannot run assembly: the intrinsic, which computes the same.
    #[cfg(miri)]
    #[target_feature(enable = "avx2")]
    fn mul32(a: __m256i, b: __m256i) -> __m256i {
        core::arch::x86_64::_mm256_mul_epu32(a, b)
    }

    /// h ← h × r, lane by lane: 26×26-bit products (`vpmuludq`), then one carry pass.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mul_lanes(h: &mut [__m256i; 5], r: &[__m256i; 5], s: &[__m256i; 5]) {
        let m = mul32;
        let a = _mm256_add_epi64;
        let [h0, h1, h2, h3, h4] = *h;
        let d0 = a(
            a(a(a(m(h0, r[0]), m(h1, s[4])), m(h2, s[3])), m(h3, s[2])),
            m(h4, s[1]),
        );
        let d1 = a(
            a(a(a(m(h0, r[1]), m(h1, r[0])), m(h2, s[4])), m(h3, s[3])),
            m(h4, s[2]),
        );
        let d2 = a(
            a(a(a(m(h0, r[2]), m(h1, r[1])), m(h2, r[0])), m(h3, s[4])),
            m(h4, s[3]),
        );
        let d3 = a(
            a(a(a(m(h0, r[3]), m(h1, r[2])), m(h2, r[1])), m(h3, r[0])),
            m(h4, s[4]),
        );
        let d4 = a(
            a(a(a(m(h0, r[4]), m(h1, r[3])), m(h2, r[2])), m(h3, r[1])),
            m(h4, r[0]),
        );
        let mask = _mm256_set1_epi64x(M26 as i64);
        let c = _mm256_srli_epi64::<26>(d0);
        h[0] = _mm256_and_si256(d0, mask);
        let d1 = a(d1, c);
        let c = _mm256_srli_epi64::<26>(d1);
        h[1] = _mm256_and_si256(d1, mask);
        let d2 = a(d2, c);
        let c = _mm256_srli_epi64::<26>(d2);
        h[2] = _mm256_and_si256(d2, mask);
        let d3 = a(d3, c);
        let c = _mm256_srli_epi64::<26>(d3);
        h[3] = _mm256_and_si256(d3, mask);
        let d4 = a(d4, c);
        let c = _mm256_srli_epi64::<26>(d4);
        h[4] = _mm256_and_si256(d4, mask);
        // c × 5 = c + 4c.
        let h0 = a(h[0], a(c, _mm256_slli_epi64::<2>(c)));
        let c = _mm256_srli_epi64::<26>(h0);
        h[0] = _mm256_and_si256(h0, mask);
        h[1] = a(h[1], c);
    }

    /// Limbs of per-lane multipliers (lane order as the message lanes: blocks 0, 2, 1, 3),
    /// and the limbs × 5.
    #[target_feature(enable = "avx2")]
    fn lanes(p: [&[u64; 5]; 4]) -> ([__m256i; 5], [__m256i; 5]) {
        let mut r = [_mm256_setzero_si256(); 5];
        let mut s = [_mm256_setzero_si256(); 5];
        for i in 0..5 {
            let v = |l: usize, k: u64| (p[l][i] * k) as i64;
            r[i] = _mm256_setr_epi64x(v(0, 1), v(1, 1), v(2, 1), v(3, 1));
            s[i] = _mm256_setr_epi64x(v(0, 5), v(1, 5), v(2, 5), v(3, 5));
        }
        (r, s)
    }

    /// Absorbs `msg` (a non-zero multiple of 64 bytes, all full blocks) from h = 0 under the
    /// clamped r (two words); gives h as the scalar code keeps it (two words, then at most 7
    /// above 2^128), for it to go on from.
    #[target_feature(enable = "avx2")]
    pub(super) fn blocks(r0: u64, r1: u64, msg: &[u8]) -> [u64; 3] {
        let r1 = limbs26(r0, r1);
        let r2 = mul(&r1, &r1);
        let r3 = mul(&r2, &r1);
        let r4 = mul(&r2, &r2);
        // Vector lanes hold blocks 0, 2, 1, 3 of each 64 bytes (how unpacking two 32-byte
        // loads orders them), so the last step multiplies them by r⁴, r², r³, r.
        let (rr, ss) = lanes([&r4, &r4, &r4, &r4]);
        let (rl, sl) = lanes([&r4, &r2, &r3, &r1]);
        let mask = _mm256_set1_epi64x(M26 as i64);
        let hibit = _mm256_set1_epi64x(1 << 24);
        let mut h = [_mm256_setzero_si256(); 5];
        let mut steps = msg.chunks_exact(64).peekable();
        while let Some(four) = steps.next() {
            let p = four.as_ptr().cast::<__m256i>();
            #[allow(unsafe_code)]
            // SAFETY: `four` is 64 readable bytes (chunks_exact(64)): two unaligned 32-byte
            // loads; AVX2 is enabled in this function.
            let (x, y) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
            let t0 = _mm256_unpacklo_epi64(x, y);
            let t1 = _mm256_unpackhi_epi64(x, y);
            let m = [
                _mm256_and_si256(t0, mask),
                _mm256_and_si256(_mm256_srli_epi64::<26>(t0), mask),
                _mm256_and_si256(
                    _mm256_or_si256(_mm256_srli_epi64::<52>(t0), _mm256_slli_epi64::<12>(t1)),
                    mask,
                ),
                _mm256_and_si256(_mm256_srli_epi64::<14>(t1), mask),
                _mm256_or_si256(_mm256_srli_epi64::<40>(t1), hibit),
            ];
            for (hl, ml) in h.iter_mut().zip(m) {
                *hl = _mm256_add_epi64(*hl, ml);
            }
            if steps.peek().is_some() {
                mul_lanes(&mut h, &rr, &ss);
            } else {
                mul_lanes(&mut h, &rl, &sl);
            }
        }
        let lane_sum = |v: __m256i| {
            (_mm256_extract_epi64::<0>(v) as u64)
                + (_mm256_extract_epi64::<1>(v) as u64)
                + (_mm256_extract_epi64::<2>(v) as u64)
                + (_mm256_extract_epi64::<3>(v) as u64)
        };
        finish([
            lane_sum(h[0]),
            lane_sum(h[1]),
            lane_sum(h[2]),
            lane_sum(h[3]),
            lane_sum(h[4]),
        ])
    }

    /// The lanes' sum (26-bit limbs, each under 2^40), carried into the scalar code's form.
    pub(super) fn finish(sum: [u64; 5]) -> [u64; 3] {
        let mut t = carry(sum);
        // One more pass without the wrap-around: t0..t3 < 2^26, t4 < 2^27.
        for i in 0..4 {
            let c = t[i] >> 26;
            t[i] &= M26;
            t[i + 1] += c;
        }
        // Into two words and what lies above: t4 < 2^27, so at most 7 at 2^128.
        let low = u128::from(t[0])
            | u128::from(t[1]) << 26
            | u128::from(t[2]) << 52
            | u128::from(t[3]) << 78
            | u128::from(t[4] & ((1 << 24) - 1)) << 104;
        [low as u64, (low >> 64) as u64, t[4] >> 24]
    }
}

/// Eight blocks at a time in the eight 64-bit lanes of AVX-512 registers: the AVX2 code's
/// layout and steps. Each step is a chain of dependent multiplies and carries that takes about
/// as long on 512 bits as on 256, so twice the blocks a step is nearly twice the speed.
/// Lane j takes blocks j, j + 8, j + 16... multiplied by r⁸ each step and by r⁸⁻ʲ at the last.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::avx2::{finish, limbs26, mul};
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_loadu_si512, _mm512_or_si512,
        _mm512_reduce_add_epi64, _mm512_set1_epi64, _mm512_setr_epi64, _mm512_setzero_si512,
        _mm512_slli_epi64, _mm512_srli_epi64, _mm512_unpackhi_epi64, _mm512_unpacklo_epi64,
    };

    const M26: u64 = (1 << 26) - 1;

    /// `vpmuludq` on 512 bits, as one instruction for the reason `avx2::mul32` gives.
    #[cfg(not(miri))]
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn mul32(a: __m512i, b: __m512i) -> __m512i {
        let d;
        #[allow(unsafe_code)]
        // SAFETY: `vpmuludq` reads two vector registers and writes a third; it touches no
        // memory, stack or flags, as the options say. AVX-512F is enabled in this function.
        unsafe {
            core::arch::asm!(
                "vpmuludq {d}, {a}, {b}",
                a = in(zmm_reg) a,
                b = in(zmm_reg) b,
                d = lateout(zmm_reg) d,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        d
    }

    /// Miri cannot run assembly: the intrinsic, which computes the same.
    #[cfg(miri)]
    #[target_feature(enable = "avx512f")]
    fn mul32(a: __m512i, b: __m512i) -> __m512i {
        core::arch::x86_64::_mm512_mul_epu32(a, b)
    }

    /// h ← h × r, lane by lane, then one carry pass (as `avx2::mul_lanes`).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn mul_lanes(h: &mut [__m512i; 5], r: &[__m512i; 5], s: &[__m512i; 5]) {
        let m = mul32;
        let a = _mm512_add_epi64;
        let [h0, h1, h2, h3, h4] = *h;
        let d0 = a(
            a(a(a(m(h0, r[0]), m(h1, s[4])), m(h2, s[3])), m(h3, s[2])),
            m(h4, s[1]),
        );
        let d1 = a(
            a(a(a(m(h0, r[1]), m(h1, r[0])), m(h2, s[4])), m(h3, s[3])),
            m(h4, s[2]),
        );
        let d2 = a(
            a(a(a(m(h0, r[2]), m(h1, r[1])), m(h2, r[0])), m(h3, s[4])),
            m(h4, s[3]),
        );
        let d3 = a(
            a(a(a(m(h0, r[3]), m(h1, r[2])), m(h2, r[1])), m(h3, r[0])),
            m(h4, s[4]),
        );
        let d4 = a(
            a(a(a(m(h0, r[4]), m(h1, r[3])), m(h2, r[2])), m(h3, r[1])),
            m(h4, r[0]),
        );
        let mask = _mm512_set1_epi64(M26 as i64);
        let c = _mm512_srli_epi64::<26>(d0);
        h[0] = _mm512_and_si512(d0, mask);
        let d1 = a(d1, c);
        let c = _mm512_srli_epi64::<26>(d1);
        h[1] = _mm512_and_si512(d1, mask);
        let d2 = a(d2, c);
        let c = _mm512_srli_epi64::<26>(d2);
        h[2] = _mm512_and_si512(d2, mask);
        let d3 = a(d3, c);
        let c = _mm512_srli_epi64::<26>(d3);
        h[3] = _mm512_and_si512(d3, mask);
        let d4 = a(d4, c);
        let c = _mm512_srli_epi64::<26>(d4);
        h[4] = _mm512_and_si512(d4, mask);
        // c × 5 = c + 4c.
        let h0 = a(h[0], a(c, _mm512_slli_epi64::<2>(c)));
        let c = _mm512_srli_epi64::<26>(h0);
        h[0] = _mm512_and_si512(h0, mask);
        h[1] = a(h[1], c);
    }

    /// Limbs of per-lane multipliers, and the limbs × 5.
    #[target_feature(enable = "avx512f")]
    fn lanes(p: [&[u64; 5]; 8]) -> ([__m512i; 5], [__m512i; 5]) {
        let mut r = [_mm512_setzero_si512(); 5];
        let mut s = [_mm512_setzero_si512(); 5];
        for i in 0..5 {
            let v = |l: usize, k: u64| (p[l][i] * k) as i64;
            let row = |k: u64| {
                _mm512_setr_epi64(
                    v(0, k),
                    v(1, k),
                    v(2, k),
                    v(3, k),
                    v(4, k),
                    v(5, k),
                    v(6, k),
                    v(7, k),
                )
            };
            r[i] = row(1);
            s[i] = row(5);
        }
        (r, s)
    }

    /// Absorbs `msg` (a non-zero multiple of 128 bytes, all full blocks) from h = 0 under the
    /// clamped r (two words); gives h as the scalar code keeps it, as `avx2::blocks` does.
    #[target_feature(enable = "avx512f,avx2")]
    pub(super) fn blocks(r0: u64, r1: u64, msg: &[u8]) -> [u64; 3] {
        let p1 = limbs26(r0, r1);
        let p2 = mul(&p1, &p1);
        let p3 = mul(&p2, &p1);
        let p4 = mul(&p2, &p2);
        let p5 = mul(&p4, &p1);
        let p6 = mul(&p4, &p2);
        let p7 = mul(&p4, &p3);
        let p8 = mul(&p4, &p4);
        // Unpacking two 64-byte loads (blocks 0-3 and 4-7) works within 128-bit lanes, so the
        // vector lanes hold blocks 0, 4, 1, 5, 2, 6, 3, 7 of each 128 bytes, and the last step
        // multiplies them by r⁸, r⁴, r⁷, r³, r⁶, r², r⁵, r.
        let (rr, ss) = lanes([&p8; 8]);
        let (rl, sl) = lanes([&p8, &p4, &p7, &p3, &p6, &p2, &p5, &p1]);
        let mask = _mm512_set1_epi64(M26 as i64);
        let hibit = _mm512_set1_epi64(1 << 24);
        let mut h = [_mm512_setzero_si512(); 5];
        let mut steps = msg.chunks_exact(128).peekable();
        while let Some(eight) = steps.next() {
            let p = eight.as_ptr().cast::<__m512i>();
            #[allow(unsafe_code)]
            // SAFETY: `eight` is 128 readable bytes (chunks_exact(128)): two unaligned 64-byte
            // loads; AVX-512F is enabled in this function.
            let (x, y) = unsafe { (_mm512_loadu_si512(p), _mm512_loadu_si512(p.add(1))) };
            let t0 = _mm512_unpacklo_epi64(x, y);
            let t1 = _mm512_unpackhi_epi64(x, y);
            let m = [
                _mm512_and_si512(t0, mask),
                _mm512_and_si512(_mm512_srli_epi64::<26>(t0), mask),
                _mm512_and_si512(
                    _mm512_or_si512(_mm512_srli_epi64::<52>(t0), _mm512_slli_epi64::<12>(t1)),
                    mask,
                ),
                _mm512_and_si512(_mm512_srli_epi64::<14>(t1), mask),
                _mm512_or_si512(_mm512_srli_epi64::<40>(t1), hibit),
            ];
            for (hl, ml) in h.iter_mut().zip(m) {
                *hl = _mm512_add_epi64(*hl, ml);
            }
            if steps.peek().is_some() {
                mul_lanes(&mut h, &rr, &ss);
            } else {
                mul_lanes(&mut h, &rl, &sl);
            }
        }
        let lane_sum = |v: __m512i| _mm512_reduce_add_epi64(v) as u64;
        finish([
            lane_sum(h[0]),
            lane_sum(h[1]),
            lane_sum(h[2]),
            lane_sum(h[3]),
            lane_sum(h[4]),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every vector width this CPU has gives RustCrypto's tag: random keys and messages, and
    /// the largest limbs (all-ones keys and messages), at every length to past several steps
    /// of eight blocks.
    #[test]
    fn every_lane_width_matches_rustcrypto() {
        use poly1305::universal_hash::KeyInit as _;
        let mut widths = vec![Lanes::One];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            widths.push(Lanes::Four);
            if std::is_x86_feature_detected!("avx512f") {
                widths.push(Lanes::Eight);
            }
        }
        let ones = [0xffu8; 32];
        let mut r_only = [0xffu8; 32];
        r_only[16..].fill(0);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        for len in 0..1400 {
            let mut key = [0u8; 32];
            key.iter_mut().for_each(|b| *b = next());
            let msg: Vec<u8> = (0..len).map(|_| next()).collect();
            let all_ones = vec![0xffu8; len];
            for (k, m) in [(&key, &msg), (&ones, &all_ones), (&r_only, &all_ones)] {
                let theirs = ::poly1305::Poly1305::new(k.into()).compute_unpadded(m);
                let mut words = [0u64; 4];
                for (w, b) in words.iter_mut().zip(k.chunks_exact(8)) {
                    *w = le64(b);
                }
                for &lanes in &widths {
                    let ours = poly1305_lanes(&words, m, lanes);
                    assert_eq!(ours, theirs.as_slice(), "{lanes:?}, len {len}");
                }
            }
        }
    }
}
