//! A deterministic in-memory network with a virtual clock, for testing sessions without
//! sockets or real time (quinn-proto's test `Pair` is the model).
//!
//! Two sessions are joined by two one-way links. Each link can cut what it carries into
//! random small pieces (fragmentation), hold them back for a fixed latency (delay), and stop
//! delivering at some point (loss of the connection: the bytes vanish and neither side is told,
//! as with a dead peer or a cut cable). The clock only moves when nothing else can happen, and
//! then it jumps straight to the next deadline, so timer tests take no real time and always see
//! the same sequence of events for the same seed.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use crate::error::SessionError;
use crate::mechanism::Entropy;
use crate::rng::SplitMix64;
use crate::session::{Session, SessionConfig, SessionEvent};

/// The simulation's random generator.
#[derive(Debug, Clone)]
pub struct SimRng(SplitMix64);

impl SimRng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SimRng(SplitMix64::new(seed))
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.0.below((hi - lo) as u64 + 1) as usize
    }
}

/// How one direction of the simulated connection behaves.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Largest piece delivered at once; every transmitted chunk is cut into random pieces of
    /// 1..=`max_piece` bytes. The default, `usize::MAX`, bounds a piece only by its chunk, so
    /// even a default link cuts chunks at random places (seeded).
    pub max_piece: usize,
    /// Time from transmit to delivery.
    pub latency: Duration,
    /// Stop delivering after this many bytes (the rest is lost silently).
    pub cut_after: Option<usize>,
    /// Flip bits of the byte at this offset of the stream (tamper tests): those of
    /// `flip_mask`.
    pub flip_at: Option<usize>,
    /// The bits `flip_at` flips (default 1, the lowest).
    pub flip_mask: u8,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            max_piece: usize::MAX,
            latency: Duration::ZERO,
            cut_after: None,
            flip_at: None,
            flip_mask: 1,
        }
    }
}

impl LinkConfig {
    /// Cuts `chunk` into the pieces this link delivers, given `carried` bytes of the stream
    /// before it (counted on here): random sizes of 1..=`max_piece`, nothing past
    /// `cut_after`, the `flip_at` byte altered. Both simulators' links go through it.
    pub(crate) fn pieces(
        &self,
        mut chunk: Bytes,
        carried: &mut usize,
        rng: &mut SplitMix64,
        mut deliver: impl FnMut(Bytes),
    ) {
        while !chunk.is_empty() {
            let max = self.max_piece.min(chunk.len());
            let n = if max <= 1 {
                1
            } else {
                1 + rng.below(max as u64) as usize
            };
            let piece = chunk.split_to(n);
            let allowed = self
                .cut_after
                .map_or(usize::MAX, |limit| limit.saturating_sub(*carried));
            let mut piece = piece.slice(..piece.len().min(allowed));
            if let Some(at) = self.flip_at {
                if (*carried..*carried + piece.len()).contains(&at) {
                    let mut bytes = piece.to_vec();
                    bytes[at - *carried] ^= self.flip_mask;
                    piece = Bytes::from(bytes);
                }
            }
            *carried += piece.len();
            if !piece.is_empty() {
                deliver(piece);
            }
        }
    }
}

#[derive(Debug)]
struct Link {
    config: LinkConfig,
    in_flight: VecDeque<(Instant, Bytes)>,
    carried: usize,
    /// Every byte carried, in order (for tests that parse the stream).
    transcript: Vec<u8>,
    /// The sender's output stays queued in its session (see [`Pair::hold`]).
    held: bool,
}

impl Link {
    fn new(config: LinkConfig) -> Self {
        Link {
            config,
            in_flight: VecDeque::new(),
            carried: 0,
            transcript: Vec::new(),
            held: false,
        }
    }

    fn send(&mut self, chunk: Bytes, now: Instant, rng: &mut SimRng) {
        let at = now + self.config.latency;
        self.config
            .pieces(chunk, &mut self.carried, &mut rng.0, |piece| {
                self.transcript.extend_from_slice(&piece);
                self.in_flight.push_back((at, piece));
            });
    }

    fn next_due(&self) -> Option<Instant> {
        self.in_flight.front().map(|(t, _)| *t)
    }
}

/// One end of the pair: its session, read buffer, and what it has said so far.
#[derive(Debug)]
pub struct End {
    /// The session.
    pub session: Session,
    /// Bytes received and not yet consumed.
    pub rx: BytesMut,
    /// Every event the session produced, in order.
    pub events: Vec<SessionEvent>,
    /// The session's error, once it failed.
    pub error: Option<SessionError>,
}

impl End {
    fn new(session: Session) -> Self {
        End {
            session,
            rx: BytesMut::new(),
            events: Vec::new(),
            error: None,
        }
    }

    /// The messages received so far.
    pub fn messages(&self) -> Vec<crate::Message> {
        self.events
            .iter()
            .filter_map(|e| match e {
                SessionEvent::Message(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    fn drain_events(&mut self) {
        while let Some(e) = self.session.poll_event() {
            self.events.push(e);
        }
    }
}

/// Two sessions joined by a simulated connection.
#[derive(Debug)]
pub struct Pair {
    /// The connecting side.
    pub a: End,
    /// The accepting side.
    pub b: End,
    /// Virtual time now.
    pub now: Instant,
    /// Virtual time at the start.
    pub start: Instant,
    ab: Link,
    ba: Link,
    rng: SimRng,
}

impl Pair {
    /// A pair with instant links (cutting chunks at random places; see
    /// [`LinkConfig::max_piece`]).
    pub fn new(a: SessionConfig, b: SessionConfig) -> Self {
        Pair::with_links(a, b, LinkConfig::default(), LinkConfig::default(), 1)
    }

    /// A pair with the given links (`ab` carries a's bytes to b) and random seed. A config
    /// without [`SessionConfig::entropy`] gets some derived from the seed, so CURVE runs
    /// reproducibly.
    pub fn with_links(
        mut a: SessionConfig,
        mut b: SessionConfig,
        ab: LinkConfig,
        ba: LinkConfig,
        seed: u64,
    ) -> Self {
        // A generator of its own, so the links' fragmentation stays what it was for a seed.
        let mut entropy_rng = SimRng::new(seed ^ 0x656e_7472_6f70_7900);
        for config in [&mut a, &mut b] {
            if config.entropy.is_none() {
                let mut bytes = [0u8; 32];
                for chunk in bytes.chunks_exact_mut(8) {
                    chunk.copy_from_slice(&entropy_rng.next_u64().to_le_bytes());
                }
                config.entropy = Some(Entropy::from_bytes(bytes));
            }
        }
        // The one real clock reading of a simulation: a base instant that virtual time is
        // counted from. Nothing depends on its value.
        let start = Instant::now();
        Pair {
            a: End::new(Session::new(a, start)),
            b: End::new(Session::new(b, start)),
            now: start,
            start,
            ab: Link::new(ab),
            ba: Link::new(ba),
            rng: SimRng::new(seed),
        }
    }

    /// Virtual time elapsed since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Moves bytes until nothing more can happen without the clock moving. Returns whether
    /// anything happened.
    pub fn drive(&mut self) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            while let Some(chunk) = (!self.ab.held)
                .then(|| self.a.session.poll_transmit())
                .flatten()
            {
                self.ab.send(chunk, self.now, &mut self.rng);
                progressed = true;
            }
            while let Some(chunk) = (!self.ba.held)
                .then(|| self.b.session.poll_transmit())
                .flatten()
            {
                self.ba.send(chunk, self.now, &mut self.rng);
                progressed = true;
            }
            progressed |= Self::deliver(&mut self.ab, &mut self.b, self.now);
            progressed |= Self::deliver(&mut self.ba, &mut self.a, self.now);
            self.a.drain_events();
            self.b.drain_events();
            if !progressed {
                return any;
            }
            any = true;
        }
    }

    fn deliver(link: &mut Link, to: &mut End, now: Instant) -> bool {
        let mut any = false;
        while link.next_due().is_some_and(|t| t <= now) {
            let (_, piece) = link.in_flight.pop_front().expect("checked");
            any = true;
            if to.error.is_some() {
                continue;
            }
            to.rx.extend_from_slice(&piece);
            if let Err(e) = to.session.handle_input(&mut to.rx, now) {
                to.error = Some(e);
            }
        }
        any
    }

    /// The next instant at which something is scheduled (a session timer or a delivery).
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            self.a.session.poll_timeout(),
            self.b.session.poll_timeout(),
            self.ab.next_due(),
            self.ba.next_due(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Drives, then jumps the clock to the next deadline and fires the timers due then.
    /// Returns false when nothing is scheduled at all.
    pub fn step(&mut self) -> bool {
        self.drive();
        let Some(t) = self.next_deadline() else {
            return false;
        };
        self.now = self.now.max(t);
        for end in [&mut self.a, &mut self.b] {
            if end.error.is_none() {
                if let Err(e) = end.session.handle_timeout(self.now) {
                    end.error = Some(e);
                }
            }
        }
        self.drive();
        true
    }

    /// Runs until `d` of virtual time has passed since the start (or nothing is scheduled).
    pub fn run_until(&mut self, d: Duration) {
        let until = self.start + d;
        self.drive();
        while let Some(t) = self.next_deadline() {
            if t > until {
                break;
            }
            self.step();
        }
        self.now = self.now.max(until);
        self.drive();
    }

    /// Loses every byte not yet delivered and every byte sent from now on, both ways.
    pub fn cut(&mut self) {
        for link in [&mut self.ab, &mut self.ba] {
            link.in_flight.clear();
            link.config.cut_after = Some(link.carried);
        }
    }

    /// While held, [`Pair::drive`] leaves the output of `dir`'s sender queued in its session,
    /// for [`Pair::intercept`] to take: a man in the middle who sees every byte first.
    pub fn hold(&mut self, dir: Direction, held: bool) {
        match dir {
            Direction::AToB => self.ab.held = held,
            Direction::BToA => self.ba.held = held,
        }
    }

    /// Takes what the sending end of `dir` has queued, before it reaches the link: the test
    /// may inspect, alter, drop, repeat or reorder the bytes (an attacker on the wire) and
    /// pass them on with [`Pair::inject`]. Bytes already on the link are not included.
    pub fn intercept(&mut self, dir: Direction) -> Vec<Bytes> {
        let from = match dir {
            Direction::AToB => &mut self.a,
            Direction::BToA => &mut self.b,
        };
        std::iter::from_fn(|| from.session.poll_transmit()).collect()
    }

    /// Bytes the link of `dir` has carried so far (a clean run measures where to tamper).
    pub fn carried(&self, dir: Direction) -> usize {
        match dir {
            Direction::AToB => self.ab.carried,
            Direction::BToA => self.ba.carried,
        }
    }

    /// Every byte the link of `dir` has carried, in order.
    pub fn transcript(&self, dir: Direction) -> &[u8] {
        match dir {
            Direction::AToB => &self.ab.transcript,
            Direction::BToA => &self.ba.transcript,
        }
    }

    /// Puts bytes on the link of `dir` as if its sender had just written them; the next
    /// [`Pair::drive`] delivers them.
    pub fn inject(&mut self, dir: Direction, bytes: Bytes) {
        let link = match dir {
            Direction::AToB => &mut self.ab,
            Direction::BToA => &mut self.ba,
        };
        link.send(bytes, self.now, &mut self.rng);
    }
}

/// One way through a [`Pair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From `a` (the connecting side) to `b`.
    AToB,
    /// From `b` to `a`.
    BToA,
}

// The simulator is what every timing, fragmentation and tamper test stands on: if it stopped
// cutting chunks, flipping the byte asked for or firing a timer due at the end of a run, those
// tests would go on passing while proving nothing. These pin what it promises.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::{CurveKeyPair, CurveSecretKey, MechanismConfig};
    use crate::SocketType;

    #[test]
    fn the_generator_is_splitmix_and_range_covers_both_bounds_only() {
        let (mut sim, mut reference) = (SimRng::new(7), SplitMix64::new(7));
        let draws: Vec<u64> = (0..4).map(|_| sim.next_u64()).collect();
        let expected: Vec<u64> = (0..4).map(|_| reference.next_u64()).collect();
        assert_eq!(draws, expected);
        assert_ne!(draws[0], draws[1]);

        let mut seen = [0usize; 10];
        for _ in 0..4000 {
            let n = sim.range(3, 6);
            assert!((3..=6).contains(&n), "{n} outside 3..=6");
            seen[n] += 1;
        }
        assert!(seen[3..=6].iter().all(|&c| c > 0), "{seen:?}");
        assert_eq!(sim.range(5, 5), 5);
    }

    fn link(config: LinkConfig, bytes: &[u8], seed: u64) -> Link {
        let mut l = Link::new(config);
        l.send(
            Bytes::copy_from_slice(bytes),
            Instant::now(),
            &mut SimRng::new(seed),
        );
        l
    }

    fn pieces(l: &Link) -> Vec<usize> {
        l.in_flight.iter().map(|(_, p)| p.len()).collect()
    }

    #[test]
    fn a_link_cuts_chunks_into_pieces_of_one_to_max_piece_bytes() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let cut = |max_piece| LinkConfig {
            max_piece,
            ..LinkConfig::default()
        };
        let l = link(cut(4), &data, 1);
        let sizes = pieces(&l);
        assert!(sizes.iter().all(|n| (1..=4).contains(n)), "{sizes:?}");
        assert!(sizes.contains(&1) && sizes.contains(&4), "{sizes:?}");
        let joined: Vec<u8> = l.in_flight.iter().flat_map(|(_, p)| p.to_vec()).collect();
        assert_eq!(joined, data);
        assert_eq!((l.carried, &l.transcript[..]), (1000, &data[..]));

        assert!(pieces(&link(cut(1), &data, 1)).iter().all(|&n| n == 1));
        let default = pieces(&link(LinkConfig::default(), &data, 1));
        assert_eq!(default.iter().sum::<usize>(), 1000);
        assert!(default.len() > 1, "{default:?}");
    }

    #[test]
    fn a_link_delays_by_its_latency_and_stops_after_cut_after_bytes() {
        let t0 = Instant::now();
        let mut l = Link::new(LinkConfig {
            max_piece: 3,
            latency: Duration::from_millis(40),
            cut_after: Some(10),
            ..LinkConfig::default()
        });
        l.send(Bytes::from_static(&[9; 25]), t0, &mut SimRng::new(3));
        assert_eq!(l.next_due(), Some(t0 + Duration::from_millis(40)));
        assert_eq!(pieces(&l).iter().sum::<usize>(), 10);
        assert_eq!((l.carried, l.transcript.len()), (10, 10));
    }

    #[test]
    fn a_link_flips_the_mask_bits_of_the_byte_asked_for_and_no_other() {
        for seed in 0..20 {
            for at in 0..40 {
                let l = link(
                    LinkConfig {
                        max_piece: 5,
                        flip_at: Some(at),
                        flip_mask: 0x81,
                        ..LinkConfig::default()
                    },
                    &[0xFF; 40],
                    seed,
                );
                let got: Vec<u8> = l.in_flight.iter().flat_map(|(_, p)| p.to_vec()).collect();
                for (i, b) in got.iter().enumerate() {
                    let want = if i == at { 0x7E } else { 0xFF };
                    assert_eq!(*b, want, "seed {seed}, flip at {at}, byte {i}");
                }
            }
        }
    }

    fn curve_pair(seed: u64) -> Pair {
        let server = CurveKeyPair::from_secret(CurveSecretKey::from_bytes([1; 32]));
        let client = CurveKeyPair::from_secret(CurveSecretKey::from_bytes([2; 32]));
        let mut a = SessionConfig::new(SocketType::Dealer);
        a.mechanism = MechanismConfig::curve_client(*server.public(), client);
        let mut b = SessionConfig::new(SocketType::Dealer);
        b.mechanism = MechanismConfig::curve_server(server);
        let mut p = Pair::with_links(a, b, LinkConfig::default(), LinkConfig::default(), seed);
        p.drive();
        assert!(p.a.session.is_ready() && p.b.session.is_ready());
        p
    }

    #[test]
    fn the_handshake_entropy_follows_the_seed() {
        // Reproducible for a seed, and different for each of these (seeds that a mixing by
        // `|` or `&` instead of `^` would give the same entropy).
        let seeds = [0, 1, 2, 0x656e_7472_6f70_7900];
        let transcripts: Vec<Vec<u8>> = seeds
            .iter()
            .map(|&s| curve_pair(s).transcript(Direction::AToB).to_vec())
            .collect();
        for i in 0..seeds.len() {
            for j in i + 1..seeds.len() {
                assert_ne!(transcripts[i], transcripts[j], "seeds {i} and {j}");
            }
        }
        assert_eq!(
            curve_pair(1).transcript(Direction::AToB),
            &transcripts[1][..]
        );
    }

    #[test]
    fn carried_and_transcript_are_what_each_way_carried() {
        let p = curve_pair(5);
        for dir in [Direction::AToB, Direction::BToA] {
            let t = p.transcript(dir);
            // A greeting (64 bytes) and CURVE's handshake commands, signature first.
            assert!(t.len() > 64 && t[0] == 0xFF && t[9] == 0x7F, "{dir:?}");
            assert_eq!(p.carried(dir), t.len());
        }
        assert_ne!(p.transcript(Direction::AToB), p.transcript(Direction::BToA));
    }

    #[test]
    fn run_until_fires_a_timer_due_exactly_at_its_end() {
        let mut a = SessionConfig::new(SocketType::Dealer);
        a.handshake_ivl = Some(Duration::from_secs(1));
        let mut b = SessionConfig::new(SocketType::Dealer);
        b.handshake_ivl = None;
        let silent = LinkConfig {
            cut_after: Some(0),
            ..LinkConfig::default()
        };
        let mut p = Pair::with_links(a, b, silent.clone(), silent, 1);
        p.run_until(Duration::from_millis(999));
        assert!(p.a.error.is_none());
        p.run_until(Duration::from_secs(1));
        assert_eq!(p.elapsed(), Duration::from_secs(1));
        assert!(
            matches!(
                p.a.error,
                Some(SessionError::Timeout(crate::error::Timeout::Handshake))
            ),
            "{:?}",
            p.a.error
        );
    }
}
