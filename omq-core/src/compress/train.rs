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
                if dict.len() > MAX_DICT || dict.len() < 8 {
                    return None;
                }
                // A random id in the user range (32768 to 2^31-1), as the zstd draft asks.
                let id = 32768 + SplitMix64::new(seed).below((1u64 << 31) - 1 - 32768) as u32;
                dict[4..8].copy_from_slice(&id.to_le_bytes());
                zstd::parse_dict(&dict).ok()?;
                Some(Bytes::from(dict))
            }
        }
    }
}
