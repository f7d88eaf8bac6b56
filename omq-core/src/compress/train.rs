//! Automatic dictionary training (COMPRESSION_AUTO_TRAIN): the first outgoing parts of a
//! connection are kept as samples, and once enough have gone by a 2 KiB dictionary is built
//! from their most frequent segments (FastCOVER) and shipped. Training happens once; if it
//! yields nothing useful the connection stays without a dictionary, as the drafts require.

use bytes::Bytes;

use super::{zstd, Compression, MAX_DICT};
use crate::rng::SplitMix64;

/// When and how a dictionary is trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainingParams {
    /// Size of the dictionary to build.
    pub dict_size: usize,
    /// Train after this many samples...
    pub max_samples: usize,
    /// ...or this many sampled bytes, whichever comes first.
    pub max_bytes: usize,
    /// Longer parts are sampled by their first this many bytes.
    pub max_sample_len: usize,
}

impl TrainingParams {
    /// The drafts' recommended values: LZ4 trains after 100 samples of up to 4 KiB, zstd after
    /// 1000 samples or 100 KiB of samples of up to 2 KiB; both build 2 KiB dictionaries.
    pub fn for_kind(kind: Compression) -> Self {
        match kind {
            Compression::Lz4 => TrainingParams {
                dict_size: 2048,
                max_samples: 100,
                max_bytes: 100 * 1024,
                max_sample_len: 4096,
            },
            Compression::Zstd => TrainingParams {
                dict_size: 2048,
                max_samples: 1000,
                max_bytes: 100 * 1024,
                max_sample_len: 2048,
            },
        }
    }
}

/// Samples kept for training.
#[derive(Debug)]
pub struct Trainer {
    params: TrainingParams,
    data: Vec<u8>,
    ends: Vec<usize>,
}

/// Parts shorter than this teach a dictionary nothing.
const MIN_SAMPLE: usize = 8;

impl Trainer {
    /// A trainer with no samples yet.
    pub fn new(params: TrainingParams) -> Self {
        Trainer {
            params,
            data: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Keeps (the start of) an outgoing part.
    pub fn sample(&mut self, part: &[u8]) {
        if part.len() < MIN_SAMPLE || self.ready() {
            return;
        }
        let take = part.len().min(self.params.max_sample_len);
        self.data.extend_from_slice(&part[..take]);
        self.ends.push(self.data.len());
    }

    /// True once enough has been sampled.
    pub fn ready(&self) -> bool {
        self.ends.len() >= self.params.max_samples || self.data.len() >= self.params.max_bytes
    }

    /// Builds the dictionary (raw content for LZ4, a ZDICT blob with a random id in the user
    /// range for zstd), or None when the samples give nothing worth shipping.
    pub fn train(self, kind: Compression, seed: u64) -> Option<Bytes> {
        let mut samples = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &end in &self.ends {
            samples.push(&self.data[start..end]);
            start = end;
        }
        let params = zrip::dict::fastcover::FastCoverParams {
            k: 256,
            d: 8,
            accel: 1,
        };
        let size = self.params.dict_size.min(MAX_DICT);
        let content = zrip::dict::fastcover::select_segments(&samples, size, &params);
        if content.len() < 64 {
            return None;
        }
        match kind {
            Compression::Lz4 => Some(Bytes::from(content)),
            Compression::Zstd => {
                let mut dict = zrip::dict::finalize::finalize_dictionary(&content, &samples, size);
                // The blob is at most `size` bytes; anything too short to hold an id is no
                // dictionary (and a parse failure below refuses the rest).
                dict.get_mut(4..8)?
                    .copy_from_slice(&user_dict_id(seed).to_le_bytes());
                zstd::parse_dict(&dict).ok()?;
                Some(Bytes::from(dict))
            }
        }
    }
}

/// A random zstd dictionary id in the user range, 32768 to 2^31 - 1 (the zstd draft asks for
/// one; lower ids are reserved).
fn user_dict_id(seed: u64) -> u32 {
    const LOW: u64 = 32768;
    (LOW + SplitMix64::new(seed).below((1 << 31) - LOW)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drafts' numbers, written out.
    #[test]
    fn parameters_are_the_drafts() {
        let lz4 = TrainingParams::for_kind(Compression::Lz4);
        assert_eq!(
            (
                lz4.dict_size,
                lz4.max_samples,
                lz4.max_bytes,
                lz4.max_sample_len
            ),
            (2048, 100, 102_400, 4096)
        );
        let zstd = TrainingParams::for_kind(Compression::Zstd);
        assert_eq!(
            (
                zstd.dict_size,
                zstd.max_samples,
                zstd.max_bytes,
                zstd.max_sample_len
            ),
            (2048, 1000, 102_400, 2048)
        );
    }

    fn params(max_samples: usize, max_bytes: usize) -> TrainingParams {
        TrainingParams {
            dict_size: 2048,
            max_samples,
            max_bytes,
            max_sample_len: 16,
        }
    }

    /// Parts under 8 bytes are skipped, longer ones cut to their first `max_sample_len`
    /// bytes; sampling stops at `max_samples` samples or `max_bytes` bytes, whichever comes
    /// first.
    #[test]
    fn sampling_keeps_what_it_should_and_stops_in_time() {
        let mut t = Trainer::new(params(3, 1000));
        t.sample(&[1; 7]);
        assert!(t.ends.is_empty(), "7 bytes teach nothing");
        t.sample(&[2; 8]);
        t.sample(&[3; 40]);
        assert_eq!(t.ends, [8, 24]);
        assert!(!t.ready());
        t.sample(&[4; 9]);
        assert!(t.ready(), "three samples");
        t.sample(&[5; 9]);
        assert_eq!(t.ends, [8, 24, 33], "nothing more once ready");

        let mut t = Trainer::new(params(100, 32));
        t.sample(&[1; 16]);
        assert!(!t.ready());
        t.sample(&[2; 16]);
        assert!(t.ready(), "32 bytes");
    }

    fn json_samples(t: &mut Trainer) {
        for i in 0..1000 {
            let rec = format!(
                r#"{{"id":{i},"symbol":"ABC{}","side":"buy","price":{}.25,"qty":{}}}"#,
                i % 7,
                100 + i % 13,
                i % 50
            );
            t.sample(rec.as_bytes());
        }
    }

    /// A zstd dictionary carries a random id in the user range (32768 to 2^31 - 1), drawn
    /// from the seed; an LZ4 one is raw content of at most the dictionary size.
    #[test]
    fn trained_dictionaries_fit_their_transport() {
        let mut ids = Vec::new();
        for seed in [1, 2, 3] {
            let mut t = Trainer::new(TrainingParams::for_kind(Compression::Zstd));
            json_samples(&mut t);
            let dict = t.train(Compression::Zstd, seed).expect("trains");
            assert_eq!(&dict[..4], &[0x37, 0xa4, 0x30, 0xec]);
            assert!(dict.len() <= MAX_DICT);
            let id = u32::from_le_bytes(dict[4..8].try_into().unwrap());
            assert!((32768..1 << 31).contains(&id), "{id}");
            ids.push(id);
        }
        ids.dedup();
        assert_eq!(ids.len(), 3, "each seed its own id");

        let mut t = Trainer::new(TrainingParams::for_kind(Compression::Lz4));
        json_samples(&mut t);
        let dict = t.train(Compression::Lz4, 1).expect("trains");
        assert!((64..=2048).contains(&dict.len()), "{}", dict.len());
        assert_ne!(&dict[..4], &[0x37, 0xa4, 0x30, 0xec]);
    }

    /// Ids cover the user range and stay in it: over 200,000 seeds the lowest and highest
    /// fall within 0.1 % of its ends.
    #[test]
    fn dictionary_ids_cover_the_user_range() {
        let ids = (0..200_000u64).map(user_dict_id);
        let (lo, hi) = ids.fold((u32::MAX, 0), |(lo, hi), id| (lo.min(id), hi.max(id)));
        let top = (1u32 << 31) - 1;
        assert!(lo >= 32768 && hi <= top, "{lo}..={hi}");
        assert!(
            lo < 32768 + top / 1000 && hi > top - top / 1000,
            "{lo}..={hi}"
        );
    }

    /// Samples too few or too alike to give 64 bytes of content give no dictionary.
    #[test]
    fn too_little_to_learn_from_gives_nothing() {
        let mut t = Trainer::new(TrainingParams::for_kind(Compression::Lz4));
        t.sample(b"0123456789");
        assert!(t.train(Compression::Lz4, 1).is_none());
        let t = Trainer::new(TrainingParams::for_kind(Compression::Zstd));
        assert!(t.train(Compression::Zstd, 1).is_none());
    }
}
