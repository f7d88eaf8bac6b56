//! A forgiving cursor over fuzz input: reads past the end give zeros / empty slices, so every
//! input decodes to some sequence of operations and the seed generator can write the same
//! format byte by byte.

/// Cursor over the input.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes left.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, big-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// A length-prefixed byte string (one length byte).
    pub fn bytes8(&mut self) -> &'a [u8] {
        let n = self.u8() as usize;
        self.take(n)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }
}
