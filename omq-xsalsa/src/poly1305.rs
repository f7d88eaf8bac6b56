//! Poly1305 (RFC 8439 §2.5) with three 44/44/42-bit limbs and 128-bit products, after
//! poly1305-donna's 64-bit code. Constant time: no branch or index depends on the key or the
//! message.

use zeroize::Zeroize;

const M44: u64 = (1 << 44) - 1;
const M42: u64 = (1 << 42) - 1;

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The Poly1305 tag of `msg` under the one-time `key` (r, then s).
pub fn poly1305(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let t0 = le64(&key[0..]);
    let t1 = le64(&key[8..]);
    // r, clamped, in limbs.
    let r0 = t0 & 0xffc_0fff_ffff;
    let r1 = ((t0 >> 44) | (t1 << 20)) & 0xfff_ffc0_ffff;
    let r2 = (t1 >> 24) & 0x00f_ffff_fc0f;
    let s1 = r1 * (5 << 2);
    let s2 = r2 * (5 << 2);
    let (mut h0, mut h1, mut h2) = (0u64, 0u64, 0u64);

    let mut block = |m: &[u8; 16], hibit: u64| {
        let t0 = le64(&m[0..]);
        let t1 = le64(&m[8..]);
        h0 += t0 & M44;
        h1 += ((t0 >> 44) | (t1 << 20)) & M44;
        h2 += ((t1 >> 24) & M42) | hibit;
        let mul = |a: u64, b: u64| u128::from(a) * u128::from(b);
        let d0 = mul(h0, r0) + mul(h1, s2) + mul(h2, s1);
        let mut d1 = mul(h0, r1) + mul(h1, r0) + mul(h2, s2);
        let mut d2 = mul(h0, r2) + mul(h1, r1) + mul(h2, r0);
        let c = (d0 >> 44) as u64;
        h0 = d0 as u64 & M44;
        d1 += u128::from(c);
        let c = (d1 >> 44) as u64;
        h1 = d1 as u64 & M44;
        d2 += u128::from(c);
        let c = (d2 >> 42) as u64;
        h2 = d2 as u64 & M42;
        h0 += c * 5;
        let c = h0 >> 44;
        h0 &= M44;
        h1 += c;
    };

    let mut chunks = msg.chunks_exact(16);
    for m in &mut chunks {
        block(m.try_into().expect("16 bytes"), 1 << 40);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut m = [0u8; 16];
        m[..rest.len()].copy_from_slice(rest);
        m[rest.len()] = 1;
        block(&m, 0);
        m.zeroize();
    }

    // Fully carry h.
    let mut c = h1 >> 44;
    h1 &= M44;
    h2 += c;
    c = h2 >> 42;
    h2 &= M42;
    h0 += c * 5;
    c = h0 >> 44;
    h0 &= M44;
    h1 += c;
    c = h1 >> 44;
    h1 &= M44;
    h2 += c;
    c = h2 >> 42;
    h2 &= M42;
    h0 += c * 5;
    c = h0 >> 44;
    h0 &= M44;
    h1 += c;

    // g = h + 5 - 2^130; take g when it did not go negative (h >= p).
    let mut g0 = h0 + 5;
    c = g0 >> 44;
    g0 &= M44;
    let mut g1 = h1 + c;
    c = g1 >> 44;
    g1 &= M44;
    let mut g2 = (h2 + c).wrapping_sub(1 << 42);
    let mask = (g2 >> 63).wrapping_sub(1);
    g0 &= mask;
    g1 &= mask;
    g2 &= mask;
    let keep = !mask;
    h0 = (h0 & keep) | g0;
    h1 = (h1 & keep) | g1;
    h2 = (h2 & keep) | g2;

    // h + s mod 2^128.
    let s0 = le64(&key[16..]);
    let s1 = le64(&key[24..]);
    h0 += s0 & M44;
    c = h0 >> 44;
    h0 &= M44;
    h1 += (((s0 >> 44) | (s1 << 20)) & M44) + c;
    c = h1 >> 44;
    h1 &= M44;
    h2 += ((s1 >> 24) & M42) + c;
    h2 &= M42;

    let lo = h0 | (h1 << 44);
    let hi = (h1 >> 20) | (h2 << 24);
    let mut tag = [0u8; 16];
    tag[..8].copy_from_slice(&lo.to_le_bytes());
    tag[8..].copy_from_slice(&hi.to_le_bytes());
    tag
}
