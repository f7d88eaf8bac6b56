//! Cutting a byte stream into the pieces a network might deliver, for the property tests.

/// Cuts `data` at the given points (taken modulo its length + 1, sorted, deduplicated): the
/// pieces, in order, some possibly empty, together `data`.
pub(crate) fn split_at_points(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points {
        out.push(data[last..p].to_vec());
        last = p;
    }
    out.push(data[last..].to_vec());
    out
}
