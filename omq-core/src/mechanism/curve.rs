//! The CURVE mechanism (spec 25): CurveZMQ (spec 26) over ZMTP, byte-compatible with
//! libzmq's `curve_client` / `curve_server`.
//!
//! Four keypairs take part: the long-term ones of client (C, c) and server (S, s), which the
//! configuration gives, and a short-term pair per side and connection (C', c' and S', s'),
//! drawn from the connection's [`Entropy`] and gone with the connection. `Box[X](A->B)` is
//! NaCl's crypto_box (X25519 + XSalsa20-Poly1305): only A can seal it, only B can open it. On
//! the wire a box is its 16-byte tag followed by the ciphertext, NaCl's layout. The handshake's
//! boxes use RustCrypto's `crypto_box`; the session box (INITIATE, READY and every MESSAGE)
//! is `omq-xsalsa`'s secretbox keyed with NaCl's `crypto_box_beforenm` of the two short-term
//! keys (X25519 from `curve25519-dalek`, then HSalsa20), computed once per connection: it
//! seals the same bytes as `crypto_box`, several Salsa20 blocks at a time.
//!
//! ```text
//! client                                                     server
//! HELLO    1.0, 72 zero bytes, C', n, Box[64 zeros](C'->S)   ->            200 bytes
//!     <-  WELCOME  N, Box[S' + cookie](S->C')                              168 bytes
//!         cookie = N', SecretBox[C' + s'](cookie key)
//! INITIATE cookie, n, Box[C + vouch + properties](C'->S')    ->      257+ bytes
//!         vouch = N'', Box[C' + S](C->S')
//!     <-  READY    n, Box[properties](S'->C')                          30+ bytes
//! MESSAGE  n, Box[flags + body](C'->S' or S'->C')            <->     33+ bytes
//! ```
//!
//! Long nonces (N: 16 random bytes) protect the long-term keys; short nonces (n) are a counter
//! that starts at 1 on each side and runs on from the handshake into traffic: the client's
//! HELLO is 1, INITIATE 2, its first MESSAGE 3; the server's READY is 1, its first MESSAGE 2.
//! Every short nonce received must be above the last one accepted, so a replayed or reordered
//! command is refused. Each box's nonce is its 8 or 16 bytes behind a fixed prefix naming the
//! command ("CurveZMQHELLO---", "WELCOME-", "COOKIE--", "CurveZMQINITIATE", "VOUCH---",
//! "CurveZMQREADY---", "CurveZMQMESSAGEC" from the client, "CurveZMQMESSAGES" from the server),
//! so a box cannot be passed off as another command's.
//!
//! After the handshake every frame, commands included (PING, PONG, SUBSCRIBE, CANCEL...),
//! travels as a MESSAGE whose outer frame flags are 0; the first byte inside the box carries
//! MORE (0x01) and COMMAND (0x02). Spec 26 mentions only MORE; libzmq sends COMMAND too, and
//! so do we.
//!
//! Anything malformed, any box that does not open and any nonce out of order ends the
//! connection with a [`CurveError`] naming the cause; nothing from that peer reaches the
//! application.

use std::cell::RefCell;
use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use crypto_box::aead::{AeadInPlace, Nonce, Tag};
use crypto_box::SalsaBox;
use crypto_secretbox::{KeyInit, XSalsa20Poly1305};
use curve25519_dalek::montgomery::MontgomeryPoint;
use omq_xsalsa::{PrefixBox, SecretBox};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::auth::{connection_properties, AuthSettings, Credentials};
use super::keys::{CurveKeyPair, CurvePublicKey, Entropy, KEY_LEN};
use super::{
    peer_error, push_command, refuse, unexpected, AuthReply, AuthRequest, LocalProperties,
};
use crate::arena::{self, Arena};
use crate::error::{CurveError, ProtocolError, SessionError};
use crate::message::{Part, ARENA_KEPT, ARENA_PART_MAX, ARENA_SIZE, INLINE_CAP, SLICE_MIN};
use crate::wire::command::Command;
use crate::wire::frame::{Frame, FLAG_COMMAND, FLAG_MORE};
use crate::wire::greeting::MechanismName;
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;

/// Poly1305 tag length: every box is this much longer than what it holds.
const TAG: usize = 16;
/// HELLO is exactly this long (spec 26), name included.
const HELLO_LEN: usize = 200;
/// WELCOME is exactly this long.
const WELCOME_LEN: usize = 168;
/// INITIATE is at least this long (no properties).
const INITIATE_MIN: usize = 257;
/// READY is at least this long (no properties).
const READY_MIN: usize = 30;
/// MESSAGE is at least this long (an empty body).
const MESSAGE_MIN: usize = 33;
/// A MESSAGE's name and short nonce, before its box.
const MESSAGE_HEADER: usize = 16;
/// Cookie: a 16-byte long nonce and an 80-byte box.
const COOKIE_LEN: usize = 96;
/// Size of the arena opened bodies are cut from. An opened plaintext keeps its flags byte in
/// front of the body, so an arena of the frame decoder's [`ARENA_SIZE`] would hold one body
/// fewer of most sizes (seven 1 KiB bodies, not eight) and CURVE would allocate more per
/// message than plain traffic. A byte more per body that can share an arena (each is over
/// [`INLINE_CAP`] bytes) makes every arena hold as many bodies as the decoder's does.
const OPENED_ARENA_SIZE: usize = ARENA_SIZE + ARENA_SIZE / (INLINE_CAP + 1);

thread_local! {
    /// Where opened MESSAGE bodies of up to [`ARENA_PART_MAX`] bytes are decrypted: the
    /// thread's, as for the frame decoder's parts (`crate::message`'s thread arena: one
    /// allocation per [`OPENED_ARENA_SIZE`] bytes, and none once an earlier buffer's bodies
    /// are all gone), so a connection keeps no partly used buffer of its own.
    static OPENED: RefCell<Arena<OPENED_ARENA_SIZE, ARENA_KEPT>> = RefCell::new(Arena::default());
}

/// Flags inside a MESSAGE box (libzmq's `msg_t::more` and `msg_t::command`).
const BOX_MORE: u8 = 0x01;
const BOX_COMMAND: u8 = 0x02;

/// A CURVE side: a client that knows its server's public key, or a server; each with its own
/// long-term keypair. `Debug` shows public keys only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurveConfig {
    keypair: CurveKeyPair,
    server_key: Option<CurvePublicKey>,
}

impl CurveConfig {
    /// A client that trusts the server holding `server_key` and proves itself with `keypair`.
    pub fn client(server_key: CurvePublicKey, keypair: CurveKeyPair) -> Self {
        CurveConfig {
            keypair,
            server_key: Some(server_key),
        }
    }

    /// A server with its long-term keypair.
    pub fn server(keypair: CurveKeyPair) -> Self {
        CurveConfig {
            keypair,
            server_key: None,
        }
    }

    /// True for the server side.
    pub fn is_server(&self) -> bool {
        self.server_key.is_none()
    }

    /// Our long-term keypair.
    pub fn keypair(&self) -> &CurveKeyPair {
        &self.keypair
    }

    /// The server key a client trusts (None for a server).
    pub fn server_key(&self) -> Option<&CurvePublicKey> {
        self.server_key.as_ref()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    // Client.
    ExpectWelcome,
    ExpectReady,
    // Server.
    ExpectHello,
    ExpectInitiate,
    AwaitAuth,
    // Both: traffic.
    Ready,
}

/// The session box for MESSAGE traffic, bound to the nonce prefix of each direction.
#[derive(Debug)]
struct MessageBoxes {
    /// Ours: "CurveZMQMESSAGEC" from a client, "CurveZMQMESSAGES" from a server.
    seal: PrefixBox,
    /// The peer's.
    open: PrefixBox,
}

/// CURVE handshake and traffic state for one connection.
pub struct CurveMechanism {
    config: CurveConfig,
    state: State,
    /// Our short-term keypair (C', c' or S', s').
    short: CurveKeyPair,
    /// The peer's short-term public key, once known.
    peer_short: Option<CurvePublicKey>,
    /// Box between our short-term key and the peer's long-term one (client: c' and S) or the
    /// other way round (server: s and C'): HELLO and WELCOME.
    long_box: Option<SalsaBox>,
    /// Box between the two short-term keys, precomputed once: INITIATE and READY.
    session_box: Option<SecretBox>,
    /// The session box bound to the MESSAGE nonce prefix of each direction (ours to seal, the
    /// peer's to open), so a message pays for no key derivation.
    message_boxes: Option<MessageBoxes>,
    /// Client: the cookie from WELCOME, returned in INITIATE.
    cookie: [u8; COOKIE_LEN],
    /// Server: the key that seals our cookie, wiped once INITIATE has returned it.
    cookie_key: Option<Zeroizing<[u8; KEY_LEN]>>,
    /// The long nonces we will send: the vouch's (client), the cookie's and WELCOME's
    /// (server). Drawn with everything else random when the connection starts.
    vouch_nonce: [u8; 16],
    cookie_nonce: [u8; 16],
    welcome_nonce: [u8; 16],
    /// The short nonce of the next command we send.
    send_nonce: u64,
    /// The highest short nonce accepted from the peer.
    recv_nonce: u64,
    auth: AuthSettings,
    pending: Option<AuthRequest>,
    /// Server: the client's properties while the owner decides.
    peer_props: Option<Metadata>,
}

impl fmt::Debug for CurveMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveMechanism")
            .field("server", &self.config.is_server())
            .field("public_key", self.config.keypair.public())
            .field("state", &self.state)
            .field("send_nonce", &self.send_nonce)
            .field("recv_nonce", &self.recv_nonce)
            .finish_non_exhaustive()
    }
}

/// A 24-byte box nonce: a fixed prefix naming the command, then the per-command part.
fn nonce(prefix: &[u8], tail: &[u8]) -> [u8; 24] {
    debug_assert_eq!(prefix.len() + tail.len(), 24);
    let mut n = [0u8; 24];
    n[..prefix.len()].copy_from_slice(prefix);
    n[prefix.len()..].copy_from_slice(tail);
    n
}

/// A box's cipher: RustCrypto's for the handshake's boxes, omq-xsalsa's for the session box.
trait BoxCipher {
    /// Encrypts `data` in place; gives the tag.
    fn seal(&self, nonce: &[u8; 24], data: &mut [u8]) -> [u8; TAG];
    /// Checks `tag` and decrypts `data` in place; false (and `data` as it was) when the box
    /// does not open.
    fn open(&self, nonce: &[u8; 24], tag: &[u8], data: &mut [u8]) -> bool;
}

macro_rules! rustcrypto_cipher {
    ($t:ty) => {
        impl BoxCipher for $t {
            fn seal(&self, nonce: &[u8; 24], data: &mut [u8]) -> [u8; TAG] {
                self.encrypt_in_place_detached(Nonce::<Self>::from_slice(nonce), b"", data)
                    // Fails only with associated data, which CurveZMQ never uses.
                    .expect("XSalsa20-Poly1305 encryption without associated data cannot fail")
                    .into()
            }
            fn open(&self, nonce: &[u8; 24], tag: &[u8], data: &mut [u8]) -> bool {
                self.decrypt_in_place_detached(
                    Nonce::<Self>::from_slice(nonce),
                    b"",
                    data,
                    Tag::<Self>::from_slice(tag),
                )
                .is_ok()
            }
        }
    };
}
rustcrypto_cipher!(SalsaBox);
rustcrypto_cipher!(XSalsa20Poly1305);

impl BoxCipher for SecretBox {
    fn seal(&self, nonce: &[u8; 24], data: &mut [u8]) -> [u8; TAG] {
        self.seal_in_place(nonce, data)
    }
    fn open(&self, nonce: &[u8; 24], tag: &[u8], data: &mut [u8]) -> bool {
        self.open_in_place(nonce, data, tag)
    }
}

/// Appends `Box[plaintext]` (tag, then ciphertext) to `out`, encrypting in place.
fn seal_into<C: BoxCipher, B: BufMut + AsMut<[u8]>>(
    cipher: &C,
    nonce: &[u8; 24],
    plaintext: &[u8],
    out: &mut B,
) {
    let tag_at = out.as_mut().len();
    out.put_bytes(0, TAG);
    out.put_slice(plaintext);
    seal_in_place(cipher, nonce, out.as_mut(), tag_at);
}

/// Encrypts `out[tag_at + TAG..]` in place and writes its tag at `tag_at`.
fn seal_in_place<C: BoxCipher>(cipher: &C, nonce: &[u8; 24], out: &mut [u8], tag_at: usize) {
    let tag = cipher.seal(nonce, &mut out[tag_at + TAG..]);
    out[tag_at..tag_at + TAG].copy_from_slice(&tag);
}

/// Opens a box (tag, then ciphertext) in place; false when it was not sealed by the expected
/// key with this nonce, or was altered.
fn open_in_place<C: BoxCipher>(cipher: &C, nonce: &[u8; 24], tag: &[u8], data: &mut [u8]) -> bool {
    cipher.open(nonce, tag, data)
}

/// Opens a box (tag, then ciphertext); None when it does not open. The plaintext is wiped
/// when dropped.
fn open<C: BoxCipher>(cipher: &C, nonce: &[u8; 24], sealed: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    if sealed.len() < TAG {
        return None;
    }
    let (tag, ciphertext) = sealed.split_at(TAG);
    let mut plain = Zeroizing::new(ciphertext.to_vec());
    open_in_place(cipher, nonce, tag, &mut plain).then_some(plain)
}

fn salsa_box(public: &CurvePublicKey, keys: &CurveKeyPair) -> SalsaBox {
    SalsaBox::new(&public.to_crypto(), &keys.secret().to_crypto())
}

/// The session box between `public` and `keys`: NaCl's `crypto_box_beforenm` (HSalsa20 of the
/// X25519 shared secret), the key `crypto_box` derives, computed once per connection.
fn session_box(public: &CurvePublicKey, keys: &CurveKeyPair) -> SecretBox {
    let mut scalar = keys.secret().to_crypto().to_scalar();
    let shared = Zeroizing::new(scalar * MontgomeryPoint(*public.as_bytes()));
    zeroize::Zeroize::zeroize(&mut scalar);
    SecretBox::from_shared_secret(&shared.0)
}

fn key_at(bytes: &[u8], at: usize) -> CurvePublicKey {
    let mut k = [0u8; KEY_LEN];
    k.copy_from_slice(&bytes[at..at + KEY_LEN]);
    CurvePublicKey::from_bytes(k)
}

/// Refuses a key of small order before any box is made with it.
fn strong(key: CurvePublicKey, which: &'static str) -> Result<CurvePublicKey, SessionError> {
    if key.is_weak() {
        return Err(curve(CurveError::WeakKey { which }));
    }
    Ok(key)
}

fn short_nonce(bytes: &[u8], at: usize) -> u64 {
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(n)
}

fn bad_length(command: &'static str, len: usize, expected: &'static str) -> SessionError {
    ProtocolError::from(CurveError::BadLength {
        command,
        len,
        expected,
    })
    .into()
}

fn curve(e: CurveError) -> SessionError {
    ProtocolError::from(e).into()
}

impl CurveMechanism {
    /// Draws every random value the connection will need at once (short-term keypair, cookie
    /// key, long nonces), then scrubs the generator: its state could regenerate the short-term
    /// secret key, and forward secrecy depends on that key being gone with the connection.
    pub(super) fn new(config: &CurveConfig, auth: AuthSettings, entropy: &Entropy) -> Self {
        let mut rng = entropy.rng();
        let short = CurveKeyPair::generate(&mut rng);
        let mut cookie_key = Zeroizing::new([0u8; KEY_LEN]);
        rng.fill_bytes(&mut cookie_key[..]);
        let mut long_nonces = [[0u8; 16]; 3];
        for n in &mut long_nonces {
            rng.fill_bytes(n);
        }
        // rand_chacha does not wipe itself; overwrite its state in place instead.
        rng = ChaCha20Rng::from_seed([0; 32]);
        std::hint::black_box(&mut rng);
        let [vouch_nonce, cookie_nonce, welcome_nonce] = long_nonces;
        CurveMechanism {
            config: config.clone(),
            state: State::Start,
            short,
            peer_short: None,
            long_box: None,
            session_box: None,
            message_boxes: None,
            cookie: [0; COOKIE_LEN],
            cookie_key: config.is_server().then_some(cookie_key),
            vouch_nonce,
            cookie_nonce,
            welcome_nonce,
            send_nonce: 1,
            recv_nonce: 0,
            auth,
            pending: None,
            peer_props: None,
        }
    }

    /// The short nonce for the next command; it never repeats within a connection.
    fn next_nonce(&mut self) -> u64 {
        let n = self.send_nonce;
        // 2^64 commands on one connection would take millennia; refusing to wrap keeps a
        // nonce from ever being reused with the same keys.
        self.send_nonce = n.checked_add(1).expect("CURVE short nonce space exhausted");
        n
    }

    /// A short nonce from the peer: it must be above every one before it.
    fn accept_nonce(&self, got: u64) -> Result<u64, SessionError> {
        if got <= self.recv_nonce {
            return Err(curve(CurveError::NonceNotIncreasing {
                got,
                last: self.recv_nonce,
            }));
        }
        Ok(got)
    }

    pub(super) fn start(&mut self, out: &mut TxQueue) {
        match self.config.server_key {
            Some(server_key) => {
                self.long_box = Some(salsa_box(&server_key, &self.short));
                self.send_hello(out);
                self.state = State::ExpectWelcome;
            }
            None => self.state = State::ExpectHello,
        }
    }

    pub(super) fn take_auth_request(&mut self) -> Option<AuthRequest> {
        self.pending.take()
    }

    pub(super) fn handle_command(
        &mut self,
        body: &Bytes,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        let (name, _) = Command::split(body)?;
        match (self.state, &name[..]) {
            (_, b"ERROR") => Err(peer_error(body)),
            // A client greeted by a client (libzmq's greeting never says which it is).
            (State::ExpectWelcome, b"HELLO") => Err(ProtocolError::RoleMismatch.into()),
            (State::ExpectWelcome, b"WELCOME") => {
                self.handle_welcome(body)?;
                self.send_initiate(local, out);
                self.state = State::ExpectReady;
                Ok(None)
            }
            (State::ExpectReady, b"READY") => {
                let props = self.handle_ready(body)?;
                self.state = State::Ready;
                Ok(Some(connection_properties(props, None)))
            }
            (State::ExpectHello, b"HELLO") => {
                self.handle_hello(body)?;
                self.send_welcome(out);
                self.state = State::ExpectInitiate;
                Ok(None)
            }
            (State::ExpectInitiate, b"INITIATE") => {
                let (client_key, props) = self.handle_initiate(body)?;
                if self.auth.authenticate {
                    let credentials = Credentials::Curve { client_key };
                    self.pending = Some(self.auth.request(MechanismName::CURVE, credentials));
                    self.peer_props = Some(props);
                    self.state = State::AwaitAuth;
                    Ok(None)
                } else {
                    self.send_ready(local, out);
                    self.state = State::Ready;
                    Ok(Some(connection_properties(props, None)))
                }
            }
            _ => Err(unexpected(&name)),
        }
    }

    pub(super) fn handle_auth_reply(
        &mut self,
        reply: AuthReply,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        if self.state != State::AwaitAuth {
            return Ok(None);
        }
        let props = self.peer_props.take().unwrap_or_default();
        if !reply.is_allowed() {
            self.state = State::Start;
            return Err(refuse(&reply, true, out));
        }
        self.send_ready(local, out);
        self.state = State::Ready;
        Ok(Some(connection_properties(props, Some(&reply))))
    }

    // ---- client side ----

    fn send_hello(&mut self, out: &mut TxQueue) {
        let n = self.next_nonce().to_be_bytes();
        let Some(long_box) = &self.long_box else {
            return;
        };
        let public = *self.short.public();
        push_command(out, b"HELLO", HELLO_LEN - 6, |b| {
            b.put_slice(&[1, 0]); // CurveZMQ 1.0
            b.put_bytes(0, 72); // anti-amplification padding: HELLO outweighs WELCOME
            b.put_slice(public.as_bytes());
            b.put_slice(&n);
            seal_into(long_box, &nonce(b"CurveZMQHELLO---", &n), &[0; 64], b);
        });
    }

    fn handle_welcome(&mut self, body: &[u8]) -> Result<(), SessionError> {
        if body.len() != WELCOME_LEN {
            return Err(bad_length("WELCOME", body.len(), "168 bytes"));
        }
        let long_box = self.long_box.take().ok_or(curve(CurveError::WelcomeBox))?;
        let plain = open(&long_box, &nonce(b"WELCOME-", &body[8..24]), &body[24..])
            .ok_or(curve(CurveError::WelcomeBox))?;
        let server_short = strong(key_at(&plain, 0), "short-term")?;
        self.cookie.copy_from_slice(&plain[32..32 + COOKIE_LEN]);
        self.start_session(session_box(&server_short, &self.short));
        self.peer_short = Some(server_short);
        Ok(())
    }

    fn send_initiate(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        let (Some(server_key), Some(server_short)) = (self.config.server_key, self.peer_short)
        else {
            return;
        };
        // The vouch: our long-term key vouches for our short-term key, to this server only.
        let vouch_nonce = self.vouch_nonce;
        let mut vouch_plain = [0u8; 64];
        vouch_plain[..32].copy_from_slice(self.short.public().as_bytes());
        vouch_plain[32..].copy_from_slice(server_key.as_bytes());
        let mut vouch = BytesMut::with_capacity(TAG + 64);
        let vouch_box = salsa_box(&server_short, &self.config.keypair);
        seal_into(
            &vouch_box,
            &nonce(b"VOUCH---", &vouch_nonce),
            &vouch_plain,
            &mut vouch,
        );

        let props = local.to_metadata();
        let n = self.next_nonce().to_be_bytes();
        let Some(session_box) = &self.session_box else {
            return;
        };
        let cookie = self.cookie;
        let public = *self.config.keypair.public();
        let len = COOKIE_LEN + 8 + TAG + 32 + 16 + vouch.len() + props.encoded_len();
        push_command(out, b"INITIATE", len, |b| {
            b.put_slice(&cookie);
            b.put_slice(&n);
            let tag_at = b.len();
            b.put_bytes(0, TAG);
            b.put_slice(public.as_bytes());
            b.put_slice(&vouch_nonce);
            b.put_slice(&vouch);
            props.encode(b);
            seal_in_place(session_box, &nonce(b"CurveZMQINITIATE", &n), b, tag_at);
        });
    }

    fn handle_ready(&mut self, body: &[u8]) -> Result<Metadata, SessionError> {
        if body.len() < READY_MIN {
            return Err(bad_length("READY", body.len(), "at least 30 bytes"));
        }
        let n = self.accept_nonce(short_nonce(body, 6))?;
        let session_box = self
            .session_box
            .as_ref()
            .ok_or(curve(CurveError::ReadyBox))?;
        let plain = open(
            session_box,
            &nonce(b"CurveZMQREADY---", &body[6..14]),
            &body[14..],
        )
        .ok_or(curve(CurveError::ReadyBox))?;
        let props = Metadata::decode(&Bytes::copy_from_slice(&plain))?;
        self.recv_nonce = n;
        Ok(props)
    }

    // ---- server side ----

    fn handle_hello(&mut self, body: &[u8]) -> Result<(), SessionError> {
        if body.len() != HELLO_LEN {
            return Err(bad_length("HELLO", body.len(), "200 bytes"));
        }
        let (major, minor) = (body[6], body[7]);
        if (major, minor) != (1, 0) {
            return Err(curve(CurveError::BadVersion { major, minor }));
        }
        let client_short = strong(key_at(body, 80), "short-term")?;
        let n = self.accept_nonce(short_nonce(body, 112))?;
        let long_box = salsa_box(&client_short, &self.config.keypair);
        let plain = open(
            &long_box,
            &nonce(b"CurveZMQHELLO---", &body[112..120]),
            &body[120..],
        )
        .ok_or(curve(CurveError::HelloBox))?;
        // The signature holds 64 zeros; anything else was not made by a CurveZMQ client.
        if !bool::from(plain.ct_eq(&[0u8; 64][..])) {
            return Err(curve(CurveError::HelloBox));
        }
        self.recv_nonce = n;
        self.start_session(session_box(&client_short, &self.short));
        self.long_box = Some(long_box);
        self.peer_short = Some(client_short);
        Ok(())
    }

    fn send_welcome(&mut self, out: &mut TxQueue) {
        let Some(client_short) = self.peer_short else {
            return;
        };
        // The cookie carries our short-term secret key to ourselves, sealed with a key only we
        // hold: the client returns it in INITIATE.
        let Some(cookie_key) = &self.cookie_key else {
            return;
        };
        let cookie_nonce = self.cookie_nonce;
        let mut cookie_plain = Zeroizing::new([0u8; 64]);
        cookie_plain[..32].copy_from_slice(client_short.as_bytes());
        cookie_plain[32..].copy_from_slice(self.short.secret().expose_bytes());
        let cookie_box = XSalsa20Poly1305::new(cookie_key[..].into());

        let mut welcome_plain = Zeroizing::new(Vec::with_capacity(32 + COOKIE_LEN));
        welcome_plain.put_slice(self.short.public().as_bytes());
        welcome_plain.put_slice(&cookie_nonce);
        seal_into(
            &cookie_box,
            &nonce(b"COOKIE--", &cookie_nonce),
            &cookie_plain[..],
            &mut *welcome_plain,
        );

        let welcome_nonce = self.welcome_nonce;
        let Some(long_box) = self.long_box.take() else {
            return;
        };
        push_command(out, b"WELCOME", WELCOME_LEN - 8, |b| {
            b.put_slice(&welcome_nonce);
            seal_into(
                &long_box,
                &nonce(b"WELCOME-", &welcome_nonce),
                &welcome_plain,
                b,
            );
        });
    }

    /// Checks INITIATE from the outside in: size, cookie, nonce, box, vouch, properties. Gives
    /// the client's long-term key and its properties.
    fn handle_initiate(&mut self, body: &[u8]) -> Result<(CurvePublicKey, Metadata), SessionError> {
        if body.len() < INITIATE_MIN {
            return Err(bad_length("INITIATE", body.len(), "at least 257 bytes"));
        }
        let (Some(client_short), Some(cookie_key)) = (self.peer_short, self.cookie_key.take())
        else {
            return Err(curve(CurveError::BadCookie));
        };
        let cookie_box = XSalsa20Poly1305::new(cookie_key[..].into());
        let cookie = open(
            &cookie_box,
            &nonce(b"COOKIE--", &body[9..25]),
            &body[25..105],
        )
        .ok_or(curve(CurveError::BadCookie))?;
        let mut expected = Zeroizing::new([0u8; 64]);
        expected[..32].copy_from_slice(client_short.as_bytes());
        expected[32..].copy_from_slice(self.short.secret().expose_bytes());
        if !bool::from(cookie.ct_eq(&expected[..])) {
            return Err(curve(CurveError::BadCookie));
        }

        let n = self.accept_nonce(short_nonce(body, 105))?;
        let session_box = self
            .session_box
            .as_ref()
            .ok_or(curve(CurveError::InitiateBox))?;
        let plain = open(
            session_box,
            &nonce(b"CurveZMQINITIATE", &body[105..113]),
            &body[113..],
        )
        .ok_or(curve(CurveError::InitiateBox))?;
        let client_key = strong(key_at(&plain, 0), "long-term")?;
        let vouch_box = salsa_box(&client_key, &self.short);
        let vouch = open(
            &vouch_box,
            &nonce(b"VOUCH---", &plain[32..48]),
            &plain[48..128],
        )
        .ok_or(curve(CurveError::BadVouch))?;
        let mut vouched = [0u8; 64];
        vouched[..32].copy_from_slice(client_short.as_bytes());
        vouched[32..].copy_from_slice(self.config.keypair.public().as_bytes());
        if !bool::from(vouch.ct_eq(&vouched[..])) {
            return Err(curve(CurveError::BadVouch));
        }
        let props = Metadata::decode(&Bytes::copy_from_slice(&plain[128..]))?;
        self.recv_nonce = n;
        Ok((client_key, props))
    }

    fn send_ready(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        let props = local.to_metadata();
        let n = self.next_nonce().to_be_bytes();
        let Some(session_box) = &self.session_box else {
            return;
        };
        push_command(out, b"READY", 8 + TAG + props.encoded_len(), |b| {
            b.put_slice(&n);
            let tag_at = b.len();
            b.put_bytes(0, TAG);
            props.encode(b);
            seal_in_place(session_box, &nonce(b"CurveZMQREADY---", &n), b, tag_at);
        });
    }

    // ---- traffic ----

    /// Keeps the session box, and binds it to each direction's MESSAGE nonce prefix.
    fn start_session(&mut self, session_box: SecretBox) {
        let (ours, theirs) = if self.config.is_server() {
            (b"CurveZMQMESSAGES", b"CurveZMQMESSAGEC")
        } else {
            (b"CurveZMQMESSAGEC", b"CurveZMQMESSAGES")
        };
        self.message_boxes = Some(MessageBoxes {
            seal: session_box.with_prefix(ours),
            open: session_box.with_prefix(theirs),
        });
        self.session_box = Some(session_box);
    }

    /// Queues one MESSAGE holding `flags` and `len` body bytes written by `fill`. The outer
    /// frame's flags stay 0; MORE and COMMAND travel inside the box.
    fn seal_message(
        &mut self,
        flags: u8,
        len: usize,
        fill: impl FnOnce(&mut BytesMut),
        out: &mut TxQueue,
    ) {
        let n = self.next_nonce().to_be_bytes();
        let Some(boxes) = &self.message_boxes else {
            return;
        };
        out.push_frame_with(false, MESSAGE_MIN + len, |b| {
            b.put_slice(b"\x07MESSAGE");
            b.put_slice(&n);
            let tag_at = b.len();
            b.put_bytes(0, TAG);
            b.put_u8(flags);
            fill(b);
            let tag = boxes.seal.seal_in_place(&n, &mut b[tag_at + TAG..]);
            b[tag_at..tag_at + TAG].copy_from_slice(&tag);
        });
    }

    pub(super) fn encode_frame(&mut self, more: bool, body: &[u8], out: &mut TxQueue) {
        let flags = if more { BOX_MORE } else { 0 };
        self.seal_message(flags, body.len(), |b| b.put_slice(body), out);
    }

    pub(super) fn encode_command(&mut self, cmd: &Command, out: &mut TxQueue) {
        self.seal_message(BOX_COMMAND, cmd.encoded_len(), |b| cmd.encode(b), out);
    }

    /// Checks a MESSAGE's name, length and short nonce (which must increase); gives the
    /// nonce, its 8 bytes, and the box's tag.
    fn message_header(&self, body: &[u8]) -> Result<(u64, [u8; 8], [u8; TAG]), SessionError> {
        if body.len() < 8 || &body[..8] != b"\x07MESSAGE" {
            return Err(curve(CurveError::NotAMessage));
        }
        if body.len() < MESSAGE_MIN {
            return Err(bad_length("MESSAGE", body.len(), "at least 33 bytes"));
        }
        let n = self.accept_nonce(short_nonce(body, 8))?;
        let tail: [u8; 8] = body[8..16].try_into().expect("8 bytes");
        let mut tag = [0u8; TAG];
        tag.copy_from_slice(&body[MESSAGE_HEADER..MESSAGE_HEADER + TAG]);
        Ok((n, tail, tag))
    }

    /// The box for the peer's MESSAGEs, once the session has started.
    fn opener(&self) -> Result<&PrefixBox, SessionError> {
        Ok(&self
            .message_boxes
            .as_ref()
            .ok_or(curve(CurveError::MessageBox))?
            .open)
    }

    /// Opens a MESSAGE body that nothing else holds, where it lies: no copy, no allocation.
    fn open_owned(
        &self,
        tail: &[u8; 8],
        tag: &[u8; TAG],
        mut own: BytesMut,
    ) -> Result<(u8, Part), SessionError> {
        own.advance(MESSAGE_HEADER + TAG);
        if !self.opener()?.open_in_place(tail, &mut own, tag) {
            return Err(curve(CurveError::MessageBox));
        }
        let inner = own[0];
        own.advance(1);
        Ok((inner, Part::from(own.freeze())))
    }

    /// The frame an opened MESSAGE carried: the nonce is now the last one accepted, and the
    /// inner flags become the frame's.
    fn opened(&mut self, n: u64, inner: u8, body: Part) -> Result<Frame, SessionError> {
        let (more, command) = (inner & BOX_MORE != 0, inner & BOX_COMMAND != 0);
        if more && command {
            return Err(ProtocolError::CommandWithMore.into());
        }
        self.recv_nonce = n;
        let mut flags = 0;
        if more {
            flags |= FLAG_MORE;
        }
        if command {
            flags |= FLAG_COMMAND;
        }
        Ok(Frame { flags, body })
    }

    /// Opens a MESSAGE handed over as the read buffer's own bytes (see
    /// [`super::Mechanism::decode_owned_frame`]). From [`SLICE_MIN`] bytes it is decrypted in
    /// place, the plaintext a slice of the read buffer as a large message without CURVE is;
    /// shorter ones go where [`CurveMechanism::open_copy`] puts them, copied once.
    pub(super) fn decode_owned_frame(&mut self, own: BytesMut) -> Result<Frame, SessionError> {
        let (n, tail, tag) = self.message_header(&own)?;
        let (inner, body) = if own.len() >= SLICE_MIN {
            self.open_owned(&tail, &tag, own)?
        } else {
            self.open_copy(&tail, &tag, &own[MESSAGE_HEADER + TAG..])?
        };
        self.opened(n, inner, body)
    }

    pub(super) fn decode_frame(&mut self, frame: Frame) -> Result<Frame, SessionError> {
        let (n, tail, tag) = self.message_header(&frame.body)?;
        let sealed_len = frame.body.len() - MESSAGE_HEADER - TAG;
        let (inner, body) = if sealed_len > ARENA_PART_MAX + 1 {
            // In place when this frame is the only holder of its buffer.
            match frame.body.into_bytes().try_into_mut() {
                Ok(own) => self.open_owned(&tail, &tag, own)?,
                Err(shared) => self.open_copy(&tail, &tag, &shared[MESSAGE_HEADER + TAG..])?,
            }
        } else {
            self.open_copy(&tail, &tag, &frame.body[MESSAGE_HEADER + TAG..])?
        };
        self.opened(n, inner, body)
    }

    /// Opens the box `sealed` where its plaintext will live, so it is copied once: up to
    /// [`INLINE_CAP`] bytes on the stack and then inline in the part, up to
    /// [`ARENA_PART_MAX`] into the thread's arena of opened bodies ([`OPENED`]), larger ones
    /// into an allocation of their own. Gives the inner flags byte and the plaintext.
    fn open_copy(
        &self,
        tail: &[u8; 8],
        tag: &[u8; TAG],
        sealed: &[u8],
    ) -> Result<(u8, Part), SessionError> {
        let opener = self.opener()?;
        if sealed.len() <= INLINE_CAP + 1 {
            let mut buf = [0u8; INLINE_CAP + 1];
            let plain = &mut buf[..sealed.len()];
            plain.copy_from_slice(sealed);
            if !opener.open_in_place(tail, plain, tag) {
                return Err(curve(CurveError::MessageBox));
            }
            return Ok((plain[0], Part::copy_received(&plain[1..])));
        }
        let in_arena = (sealed.len() <= ARENA_PART_MAX + 1)
            .then(|| {
                arena::with_thread(&OPENED, |a| {
                    let room = a.room(sealed.len());
                    room.extend_from_slice(sealed);
                    if opener.open_in_place(tail, room, tag) {
                        Ok(a.take())
                    } else {
                        room.clear();
                        Err(curve(CurveError::MessageBox))
                    }
                })
            })
            .flatten();
        let mut plain = match in_arena {
            Some(opened) => opened?,
            // Larger, or the thread's arena is gone (its locals are being torn down).
            None => {
                let mut own = BytesMut::from(sealed);
                if !opener.open_in_place(tail, &mut own, tag) {
                    return Err(curve(CurveError::MessageBox));
                }
                own
            }
        };
        let inner = plain[0];
        plain.advance(1);
        Ok((inner, Part::from(plain.freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket_type::SocketType;

    fn local() -> LocalProperties {
        LocalProperties {
            socket_type: SocketType::Dealer,
            routing_id: Bytes::new(),
            application: Metadata::new(),
        }
    }

    fn frames(out: &mut TxQueue) -> Vec<Bytes> {
        let mut all = BytesMut::new();
        while let Some(c) = out.poll_transmit() {
            all.extend_from_slice(&c);
        }
        let mut d = crate::wire::frame::FrameDecoder::new(None);
        let mut v = Vec::new();
        while let Some(f) = d.decode(&mut all).unwrap() {
            assert!(f.is_command(), "handshake commands carry the COMMAND flag");
            v.push(f.body.to_bytes());
        }
        v
    }

    fn mechanisms(client_keys: CurveKeyPair) -> (CurveMechanism, CurveMechanism) {
        let server_keys = CurveKeyPair::generate(&mut Entropy::from_bytes([9; 32]).rng());
        let c = CurveMechanism::new(
            &CurveConfig::client(*server_keys.public(), client_keys),
            AuthSettings::default(),
            &Entropy::from_bytes([1; 32]),
        );
        let s = CurveMechanism::new(
            &CurveConfig::server(server_keys),
            AuthSettings::default(),
            &Entropy::from_bytes([2; 32]),
        );
        (c, s)
    }

    /// Runs the handshake up to the server's verdict on INITIATE.
    fn up_to_initiate(
        c: &mut CurveMechanism,
        s: &mut CurveMechanism,
        to_s: &mut TxQueue,
        to_c: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        c.start(to_s);
        s.start(to_c);
        let hello = frames(to_s).remove(0);
        assert_eq!(hello.len(), HELLO_LEN);
        assert!(s.handle_command(&hello, &local(), to_c).unwrap().is_none());
        let welcome = frames(to_c).remove(0);
        assert_eq!(welcome.len(), WELCOME_LEN);
        assert!(c
            .handle_command(&welcome, &local(), to_s)
            .unwrap()
            .is_none());
        let initiate = frames(to_s).remove(0);
        let props = local().to_metadata().encoded_len();
        assert_eq!(initiate.len(), INITIATE_MIN + props);
        s.handle_command(&initiate, &local(), to_c)
    }

    /// A client and a server mechanism taken through the handshake by hand.
    fn pair() -> (CurveMechanism, CurveMechanism) {
        let client_keys = CurveKeyPair::generate(&mut Entropy::from_bytes([8; 32]).rng());
        let (mut c, mut s) = mechanisms(client_keys);
        let (mut to_s, mut to_c) = (TxQueue::new(), TxQueue::new());
        let done = up_to_initiate(&mut c, &mut s, &mut to_s, &mut to_c).unwrap();
        assert!(done.is_some());
        let props = local().to_metadata().encoded_len();
        let ready = frames(&mut to_c).remove(0);
        assert_eq!(ready.len(), READY_MIN + props);
        assert!(c
            .handle_command(&ready, &local(), &mut to_s)
            .unwrap()
            .is_some());
        (c, s)
    }

    fn one_frame(out: &mut TxQueue) -> (u8, Bytes) {
        let mut all = BytesMut::new();
        while let Some(c) = out.poll_transmit() {
            all.extend_from_slice(&c);
        }
        let f = crate::wire::frame::FrameDecoder::new(None)
            .decode(&mut all)
            .unwrap()
            .unwrap();
        assert!(all.is_empty());
        (f.flags, f.body.to_bytes())
    }

    #[test]
    fn the_session_box_seals_as_crypto_box_does() {
        // The same key as RustCrypto's SalsaBox (X25519, then HSalsa20), both directions.
        let a = CurveKeyPair::generate(&mut Entropy::from_bytes([3; 32]).rng());
        let b = CurveKeyPair::generate(&mut Entropy::from_bytes([4; 32]).rng());
        for len in [0, 1, 31, 32, 33, 100, 1000, 5000] {
            let n = nonce(b"CurveZMQMESSAGEC", &7u64.to_be_bytes());
            let mut ours = vec![0xa5u8; len];
            let mut theirs = ours.clone();
            let t1 = session_box(b.public(), &a).seal(&n, &mut ours);
            let t2 = salsa_box(b.public(), &a).seal(&n, &mut theirs);
            assert_eq!((t1, &ours), (t2, &theirs), "len {len}");
            assert!(session_box(a.public(), &b).open(&n, &t1, &mut ours));
            assert!(ours.iter().all(|&x| x == 0xa5));
        }
    }

    #[test]
    fn a_box_shorter_than_its_tag_does_not_open_and_an_empty_one_does() {
        // The length check is all that stands between a short box and a slice out of range;
        // a box of exactly a tag holds an empty plaintext and opens.
        let a = CurveKeyPair::generate(&mut Entropy::from_bytes([3; 32]).rng());
        let b = CurveKeyPair::generate(&mut Entropy::from_bytes([4; 32]).rng());
        let n = nonce(b"CurveZMQMESSAGEC", &7u64.to_be_bytes());
        let sealer = session_box(b.public(), &a);
        let opener = session_box(a.public(), &b);
        let tag = sealer.seal(&n, &mut []);
        let plain = open(&opener, &n, &tag).expect("a tag-only box opens");
        assert!(plain.is_empty());
        for len in 0..TAG {
            assert!(open(&opener, &n, &tag[..len]).is_none(), "{len} bytes");
        }
    }

    #[test]
    fn a_ready_of_exactly_the_minimum_length_opens_and_a_shorter_one_is_refused_by_length() {
        // A READY with no properties is 30 bytes; one byte less is refused for its length,
        // before any byte of it is read as a nonce or a box.
        let handshake = || {
            let client_keys = CurveKeyPair::generate(&mut Entropy::from_bytes([8; 32]).rng());
            let (mut c, mut s) = mechanisms(client_keys);
            let (mut to_s, mut to_c) = (TxQueue::new(), TxQueue::new());
            let done = up_to_initiate(&mut c, &mut s, &mut to_s, &mut to_c).unwrap();
            assert!(done.is_some());
            // The server's own READY carries properties: replace it by a bare one.
            let _ = frames(&mut to_c);
            let n = 1u64.to_be_bytes();
            let session_box = s.session_box.as_ref().unwrap();
            let tag = session_box.seal(&nonce(b"CurveZMQREADY---", &n), &mut []);
            let mut ready = b"\x05READY".to_vec();
            ready.extend_from_slice(&n);
            ready.extend_from_slice(&tag);
            assert_eq!(ready.len(), READY_MIN);
            (c, Bytes::from(ready), to_s)
        };
        let (mut c, ready, mut to_s) = handshake();
        let props = c.handle_command(&ready, &local(), &mut to_s).unwrap();
        assert!(props.expect("the handshake is done").is_empty());
        let (mut c, ready, mut to_s) = handshake();
        let err = c
            .handle_command(&ready.slice(..READY_MIN - 1), &local(), &mut to_s)
            .unwrap_err();
        assert!(
            matches!(
                err,
                SessionError::Protocol(ProtocolError::Curve(CurveError::BadLength {
                    command: "READY",
                    len: 29,
                    ..
                }))
            ),
            "{err:?}"
        );
    }

    #[test]
    fn message_bodies_of_every_tier_open() {
        // Inline, arena and owned-buffer plaintexts, and a tampered one in each tier.
        let (mut c, mut s) = pair();
        for len in [0, 29, 30, 31, 100, 511, 512, 513, 2000, 20_000] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut q = TxQueue::new();
            c.encode_frame(true, &body, &mut q);
            c.encode_frame(false, &body, &mut q);
            let mut all = BytesMut::new();
            while let Some(chunk) = q.poll_transmit() {
                all.extend_from_slice(&chunk);
            }
            let mut d = crate::wire::frame::FrameDecoder::new(None);
            let first = d.decode(&mut all).unwrap().unwrap();
            let second = d.decode(&mut all).unwrap().unwrap();
            let f = s.decode_frame(first).unwrap();
            assert!(f.more());
            assert_eq!(&f.body[..], &body[..], "len {len}");
            let mut bad = second.body.to_bytes().to_vec();
            let at = bad.len() - 1;
            bad[at] ^= 1;
            assert!(s
                .decode_frame(Frame::message(Part::from(bad), false))
                .is_err());
            let f = s.decode_frame(second).unwrap();
            assert!(!f.more());
            assert_eq!(&f.body[..], &body[..], "len {len}");
        }
    }

    #[test]
    fn each_body_is_opened_in_its_tier() {
        // Where a plaintext lands is the point of the tiers: up to INLINE_CAP inline in the
        // part, up to ARENA_PART_MAX cut one after another from one arena, anything larger
        // decrypted in place in the frame's own buffer. Each boundary is checked both sides.
        let (mut c, mut s) = pair();
        let mut open_one = |len: usize| {
            let body = vec![0x42u8; len];
            let mut q = TxQueue::new();
            c.encode_frame(false, &body, &mut q);
            let wire = one_frame(&mut q).1.to_vec();
            let wire_at = wire.as_ptr() as usize;
            let f = s
                .decode_frame(Frame::message(Part::from(wire), false))
                .unwrap();
            assert_eq!(&f.body[..], &body[..], "len {len}");
            let at = f.body.shared().map(|b| b.as_ptr() as usize);
            let in_place = at == Some(wire_at + MESSAGE_MIN);
            (at, in_place)
        };
        // An inline body takes nothing from the arena: the arena bodies either side of it sit
        // back to back (the first of them starts a fresh arena, so the second fits).
        let first = open_one(100).0.unwrap();
        for len in [0, 1, INLINE_CAP] {
            assert_eq!(open_one(len), (None, false), "len {len}: inline");
        }
        let second = open_one(100).0.unwrap();
        assert_eq!(second, first + 101, "an inline body used the arena");
        for len in [INLINE_CAP + 1, 100, ARENA_PART_MAX] {
            let (at, in_place) = open_one(len);
            assert!(at.is_some() && !in_place, "len {len}: from the arena");
        }
        // The largest arena body (ARENA_PART_MAX, one more with the flags byte): three fit
        // in an arena, so of four in a row at least two sit back to back.
        let starts: Vec<usize> = (0..4)
            .map(|_| open_one(ARENA_PART_MAX).0.unwrap())
            .collect();
        assert!(
            starts.windows(2).any(|w| w[1] == w[0] + ARENA_PART_MAX + 1),
            "bodies of ARENA_PART_MAX bytes were not cut from an arena: {starts:?}"
        );
        for len in [ARENA_PART_MAX + 1, 20_000] {
            assert!(open_one(len).1, "len {len}: opened in place");
        }
        // 341 bytes more than the decoder's 8 KiB: a flags byte for each of the most bodies an
        // arena can hold (341 of 24 bytes, the smallest not kept inline). No more: a queued
        // part keeps its whole arena alive.
        assert_eq!(OPENED_ARENA_SIZE, 8 * 1024 + 341);
        // An opened arena holds at least as many bodies as the frame decoder's arena does
        // (ARENA_SIZE / len), flags bytes and all: the longest run back to back is what
        // OPENED_ARENA_SIZE holds.
        // 1,056-byte bodies (1,057 with the flags byte) fill an opened arena exactly: eight, the
        // last to its final byte.
        for len in [INLINE_CAP + 1, 100, 1024, 1056, 2047, ARENA_PART_MAX] {
            let per_arena = ARENA_SIZE / len;
            let starts: Vec<usize> = (0..2 * per_arena + 1)
                .map(|_| open_one(len).0.unwrap())
                .collect();
            let mut run = 1;
            let mut longest = 1;
            for w in starts.windows(2) {
                run = if w[1] == w[0] + len + 1 { run + 1 } else { 1 };
                longest = longest.max(run);
            }
            assert_eq!(
                longest,
                OPENED_ARENA_SIZE / (len + 1),
                "len {len}: bodies per arena"
            );
            assert!(
                longest >= per_arena,
                "len {len}: fewer than the decoder's {per_arena}"
            );
        }
    }

    #[test]
    fn a_frame_of_just_the_message_name_is_refused_for_its_length() {
        let (_, mut s) = pair();
        let err = s
            .decode_frame(Frame::message(Part::from(&b"\x07MESSAGE"[..]), false))
            .unwrap_err();
        assert_eq!(
            err,
            bad_length("MESSAGE", 8, "at least 33 bytes"),
            "named MESSAGE, too short to be one"
        );
    }

    #[test]
    fn a_client_whose_keys_do_not_match_fails_at_the_vouch() {
        // It claims one long-term public key but vouches with another secret key.
        let claimed = *CurveKeyPair::generate(&mut Entropy::from_bytes([5; 32]).rng()).public();
        let actual = CurveKeyPair::generate(&mut Entropy::from_bytes([6; 32]).rng());
        let liar = CurveKeyPair::mismatched(claimed, actual.secret().clone());
        let (mut c, mut s) = mechanisms(liar);
        let (mut to_s, mut to_c) = (TxQueue::new(), TxQueue::new());
        let err = up_to_initiate(&mut c, &mut s, &mut to_s, &mut to_c).unwrap_err();
        assert_eq!(err, curve(CurveError::BadVouch));
        assert!(
            to_c.is_empty(),
            "no READY for a client that failed the vouch"
        );
    }

    #[test]
    fn nonces_continue_from_the_handshake() {
        let (mut c, mut s) = pair();
        assert_eq!((c.send_nonce, c.recv_nonce), (3, 1));
        assert_eq!((s.send_nonce, s.recv_nonce), (2, 2));
        let mut q = TxQueue::new();
        c.encode_frame(false, b"x", &mut q);
        let (_, body) = one_frame(&mut q);
        assert_eq!(&body[8..16], &3u64.to_be_bytes());
        s.decode_frame(Frame::message(Part::from(body), false))
            .unwrap();
    }

    #[test]
    fn command_and_more_travel_inside_the_box() {
        let (mut c, mut s) = pair();
        let mut q = TxQueue::new();
        let ping = Command::Ping {
            ttl_deciseconds: 7,
            context: Bytes::from_static(b"ctx"),
        };
        c.encode_command(&ping, &mut q);
        let (flags, body) = one_frame(&mut q);
        assert_eq!(flags, 0, "the outer frame of a MESSAGE has no flags");
        assert_eq!(body.len(), MESSAGE_MIN + ping.encoded_len());
        let f = s
            .decode_frame(Frame::message(Part::from(body), false))
            .unwrap();
        assert!(f.is_command() && !f.more());
        assert_eq!(Command::decode(&f.body.to_bytes()).unwrap(), ping);

        s.encode_frame(true, b"part", &mut q);
        let (flags, body) = one_frame(&mut q);
        assert_eq!(flags, 0);
        let f = c
            .decode_frame(Frame::message(Part::from(body), false))
            .unwrap();
        assert!(f.more() && !f.is_command());
        assert_eq!(&f.body[..], b"part");
    }

    #[test]
    fn message_boxes_carry_the_nonce_prefix_of_their_direction() {
        // Both ends of omq agree whatever the prefixes are; another CurveZMQ peer opens a
        // client's MESSAGE only under "CurveZMQMESSAGEC" and a server's under "...S".
        let (mut c, mut s) = pair();
        for (client_sends, prefix) in [(true, b"CurveZMQMESSAGEC"), (false, b"CurveZMQMESSAGES")] {
            let (from, to) = if client_sends {
                (&mut c, &s)
            } else {
                (&mut s, &c)
            };
            let mut q = TxQueue::new();
            from.encode_frame(false, b"hi", &mut q);
            let (_, body) = one_frame(&mut q);
            let session_box = to.session_box.as_ref().unwrap();
            let plain = open(session_box, &nonce(prefix, &body[8..16]), &body[16..])
                .expect("the box opens under the spec's prefix");
            assert_eq!(&plain[..], b"\x00hi");
        }
    }

    #[test]
    fn an_initiate_of_exactly_the_minimum_length_is_accepted() {
        // An INITIATE whose box holds no properties is 257 bytes: rebuild the client's own
        // without its properties (same nonce, sealed again) and the server takes it.
        let client_keys = CurveKeyPair::generate(&mut Entropy::from_bytes([8; 32]).rng());
        let (mut c, mut s) = mechanisms(client_keys);
        let (mut to_s, mut to_c) = (TxQueue::new(), TxQueue::new());
        c.start(&mut to_s);
        s.start(&mut to_c);
        let hello = frames(&mut to_s).remove(0);
        s.handle_command(&hello, &local(), &mut to_c).unwrap();
        let welcome = frames(&mut to_c).remove(0);
        c.handle_command(&welcome, &local(), &mut to_s).unwrap();
        let initiate = frames(&mut to_s).remove(0);
        let session_box = s.session_box.as_ref().unwrap();
        let n = nonce(b"CurveZMQINITIATE", &initiate[105..113]);
        let plain = open(session_box, &n, &initiate[113..]).unwrap();
        let mut bare = BytesMut::from(&initiate[..113]);
        seal_into(session_box, &n, &plain[..128], &mut bare);
        assert_eq!(bare.len(), INITIATE_MIN);
        let props = s
            .handle_command(&bare.freeze(), &local(), &mut to_c)
            .unwrap()
            .expect("the handshake is done");
        assert!(props.is_empty());
    }

    #[test]
    fn every_byte_of_a_message_is_protected() {
        let (mut c, mut s) = pair();
        let mut q = TxQueue::new();
        c.encode_frame(false, b"hello", &mut q);
        let (_, body) = one_frame(&mut q);
        // A refused frame leaves the receiver as it was, so one receiver checks every flip.
        for i in 0..body.len() {
            let mut bad = body.to_vec();
            bad[i] ^= 0x20;
            assert!(
                s.decode_frame(Frame::message(Part::from(bad), false))
                    .is_err(),
                "flipping byte {i} went unnoticed"
            );
        }
        assert!(s
            .decode_frame(Frame::message(Part::from(body), false))
            .is_ok());
    }

    /// A HELLO whose client short-term key is `weak`, with a signature box that really opens
    /// with it: a key of small order makes the shared secret all zeros whatever the server's
    /// secret key, so the attacker can seal the box without knowing that key.
    fn hello_with_key(weak: [u8; KEY_LEN]) -> Bytes {
        let anyone = CurveKeyPair::generate(&mut Entropy::from_bytes([5; 32]).rng());
        let zero_box = salsa_box(&CurvePublicKey::from_bytes(weak), &anyone);
        let n = 1u64.to_be_bytes();
        let mut b = BytesMut::new();
        b.put_u8(5);
        b.put_slice(b"HELLO");
        b.put_slice(&[1, 0]);
        b.put_bytes(0, 72);
        b.put_slice(&weak);
        b.put_slice(&n);
        seal_into(&zero_box, &nonce(b"CurveZMQHELLO---", &n), &[0; 64], &mut b);
        assert_eq!(b.len(), HELLO_LEN);
        b.freeze()
    }

    #[test]
    fn a_hello_with_a_small_order_key_is_refused() {
        let client_keys = CurveKeyPair::generate(&mut Entropy::from_bytes([8; 32]).rng());
        for weak in [[0u8; KEY_LEN], {
            let mut k = [0u8; KEY_LEN];
            k[0] = 1;
            k[KEY_LEN - 1] = 0x80; // the ignored top bit set
            k
        }] {
            let (_, mut s) = mechanisms(client_keys.clone());
            let mut to_c = TxQueue::new();
            s.start(&mut to_c);
            let got = s.handle_command(&hello_with_key(weak), &local(), &mut to_c);
            assert_eq!(
                got.unwrap_err(),
                curve(CurveError::WeakKey {
                    which: "short-term"
                })
            );
            assert!(frames(&mut to_c).is_empty(), "no WELCOME for a weak key");
        }
    }

    #[test]
    fn a_client_refuses_a_weak_server_key_before_sending_anything() {
        let keys = CurveKeyPair::generate(&mut Entropy::from_bytes([8; 32]).rng());
        let mut config = crate::session::SessionConfig::new(SocketType::Dealer);
        config.mechanism = crate::mechanism::MechanismConfig::curve_client(
            CurvePublicKey::from_bytes([0; KEY_LEN]),
            keys,
        );
        let got = crate::mechanism::Mechanism::new(&config, Some(Entropy::from_bytes([1; 32])));
        assert!(
            matches!(got, Err(crate::error::ConfigError::WeakServerKey)),
            "{got:?}"
        );
    }
}
