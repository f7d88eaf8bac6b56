//! `omq-bench compression`: what `lz4+tcp://` and `zstd+tcp://` do to realistic 2 KiB JSON
//! messages — the bytes on the wire per message (ratio) and the CPU time to compress and
//! decompress one, with and without a trained dictionary. It runs the codec omq's sessions
//! run (`omq_core::compress::Codec`), in one thread, on messages that differ from each other
//! as telemetry does (ids, timestamps and readings change; field names and hosts repeat).

use std::time::Instant;

use omq_core::compress::{Codec, Compression, CompressionConfig, Decoded};
use omq_core::Part;

/// A telemetry record of about `len` bytes: a JSON object with a batch of readings.
pub fn json_record(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let hosts = [
        "web-01",
        "web-02",
        "db-primary",
        "db-replica",
        "cache-7",
        "queue-3",
    ];
    let metrics = [
        "cpu.user",
        "cpu.system",
        "mem.used",
        "disk.read_bytes",
        "net.rx_packets",
    ];
    let mut s = format!(
        "{{\"schema\":\"telemetry.v2\",\"batch\":{seed},\"ts\":{},\"region\":\"eu-central-1\",\"readings\":[",
        1_764_590_400_000u64 + seed * 1000 + next() % 1000
    );
    while s.len() + 120 < len {
        let v = next();
        s.push_str(&format!(
            "{{\"host\":\"{}\",\"metric\":\"{}\",\"value\":{}.{:03},\"unit\":\"{}\",\"seq\":{}}},",
            hosts[(v % 6) as usize],
            metrics[((v >> 8) % 5) as usize],
            (v >> 16) % 10_000,
            (v >> 32) % 1000,
            if (v >> 40) % 2 == 0 {
                "count"
            } else {
                "percent"
            },
            (v >> 44) % 100_000
        ));
    }
    s.pop();
    s.push_str("],\"ok\":true}");
    while s.len() < len {
        s.push(' ');
    }
    s.into_bytes()
}

/// One line of the table.
#[derive(Debug)]
pub struct Row {
    /// What was measured.
    pub name: &'static str,
    /// Plain bytes per message.
    pub plain: f64,
    /// Wire bytes per message (envelope included).
    pub wire: f64,
    /// Compression time per message, nanoseconds.
    pub encode_ns: f64,
    /// Decompression time per message, nanoseconds.
    pub decode_ns: f64,
}

fn measure(name: &'static str, config: CompressionConfig, msgs: &[Vec<u8>]) -> Row {
    let mut tx = Codec::new(&config).expect("codec");
    let mut rx = Codec::new(&CompressionConfig::new(config.kind)).expect("codec");
    // Warm up (and train, when asked: the dictionary goes out with this traffic).
    for m in msgs.iter().cycle().take(2000) {
        if let Some(d) = tx.start_message(std::iter::once(&m[..])) {
            assert_eq!(
                rx.decode_part(Part::from(d), false, None),
                Ok(Decoded::Dictionary)
            );
        }
        let w = tx.encode_part(m);
        rx.decode_part(Part::from(w), false, None).expect("decodes");
    }
    let start = Instant::now();
    let wires: Vec<_> = msgs.iter().map(|m| tx.encode_part(m)).collect();
    let encode = start.elapsed();
    let wire: usize = wires.iter().map(|w| w.len()).sum();
    let start = Instant::now();
    for w in wires {
        let _ = std::hint::black_box(rx.decode_part(Part::from(w), false, None));
    }
    let decode = start.elapsed();
    let n = msgs.len() as f64;
    Row {
        name,
        plain: msgs.iter().map(Vec::len).sum::<usize>() as f64 / n,
        wire: wire as f64 / n,
        encode_ns: encode.as_nanos() as f64 / n,
        decode_ns: decode.as_nanos() as f64 / n,
    }
}

/// Measures every transport and dictionary mode on `count` 2 KiB records and prints a table.
pub fn run(count: usize) -> Vec<Row> {
    let msgs: Vec<Vec<u8>> = (0..count as u64).map(|i| json_record(i, 2048)).collect();
    let cfg = |kind, train, level| {
        let mut c = CompressionConfig::new(kind);
        c.auto_train = train;
        c.level = level;
        c.seed = 1;
        c
    };
    let rows = vec![
        measure("lz4+tcp", cfg(Compression::Lz4, false, 1), &msgs),
        measure(
            "lz4+tcp, trained dict",
            cfg(Compression::Lz4, true, 1),
            &msgs,
        ),
        measure("zstd+tcp level 1", cfg(Compression::Zstd, false, 1), &msgs),
        measure(
            "zstd+tcp level 1, trained dict",
            cfg(Compression::Zstd, true, 1),
            &msgs,
        ),
        measure(
            "zstd+tcp level 3, trained dict",
            cfg(Compression::Zstd, true, 3),
            &msgs,
        ),
    ];
    println!("{count} JSON telemetry messages of 2048 bytes, one core, release build");
    println!(
        "| transport | wire bytes/msg | ratio | compress µs/msg | decompress µs/msg |\n|---|---:|---:|---:|---:|"
    );
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:.2} |",
            r.name,
            r.wire,
            r.plain / r.wire,
            r.encode_ns / 1000.0,
            r.decode_ns / 1000.0
        );
    }
    rows
}

#[cfg(test)]
mod tests {
    #[test]
    fn records_are_2_kib_and_compress() {
        let r = super::json_record(5, 2048);
        assert_eq!(r.len(), 2048);
        let rows = super::run(300);
        for row in rows {
            assert!(row.wire < row.plain, "{} did not compress", row.name);
        }
    }
}
