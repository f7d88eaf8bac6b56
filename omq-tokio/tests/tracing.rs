//! The `tracing` feature: spans per socket and connection, life-cycle events with their cause,
//! deliberate drops and HWM at DEBUG, and nothing per message at INFO. Run by scripts/test.sh
//! with `--features tracing`.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use omq_tokio::{Message, Options, Socket, SocketType};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

const T: Duration = Duration::from_secs(10);

#[test]
fn spans_and_life_cycle_events_reach_tracing_and_nothing_per_message_at_info() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap();
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&ep).await.unwrap();
        // Once one message has crossed, both ends have reported their handshake.
        push.send(Message::from("first")).await.unwrap();
        tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
        let deadline = tokio::time::Instant::now() + T;
        while count(&out, "HandshakeSucceeded") < 2 {
            assert!(tokio::time::Instant::now() < deadline, "{:#?}", out.lines());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let info_before_messages = count(&out, " INFO ");
        for i in 0..500u32 {
            push.send(Message::from(i.to_be_bytes().to_vec()))
                .await
                .unwrap();
        }
        for _ in 0..500 {
            tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
        }
        // Five hundred messages, and not one INFO line more.
        assert_eq!(count(&out, " INFO "), info_before_messages);

        // A ROUTER dropping a message for nobody says so at DEBUG.
        let router = Socket::new(SocketType::Router, Options::default()).unwrap();
        router
            .send(Message::multipart(["nobody", "x"]))
            .await
            .unwrap();

        // The puller leaves: the pusher's connection ends, with its cause, and a reconnection
        // is scheduled.
        drop(pull);
        let deadline = tokio::time::Instant::now() + T;
        while count(&out, "ConnectRetried") == 0 {
            assert!(tokio::time::Instant::now() < deadline, "{:#?}", out.lines());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        push.close().await.unwrap();
    });

    let lines = out.lines();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    let find = |a: &str, b: &str| lines.iter().any(|l| l.contains(a) && l.contains(b));
    assert!(find("Listening", "omq.socket{socket=PULL"), "{lines:#?}");
    assert!(find("ConnectDelayed", "DEBUG"), "dial at DEBUG: {lines:#?}");
    // Handshakes at INFO inside a connection span with the mechanism, under a socket span.
    assert!(
        find("HandshakeSucceeded", "omq.connection")
            && find("HandshakeSucceeded", "mechanism=NULL")
            && find("HandshakeSucceeded", "omq.socket")
            && find("HandshakeSucceeded", " INFO "),
        "{lines:#?}"
    );
    assert!(find("HandshakeSucceeded", "peer_address="), "{lines:#?}");
    assert!(
        find("Disconnected", "cause=") && find("Disconnected", " INFO "),
        "{lines:#?}"
    );
    assert!(find("ConnectRetried", "DEBUG"), "{lines:#?}");
    assert!(
        find("message dropped", "ROUTER: no peer with that routing id"),
        "{lines:#?}"
    );
    assert!(has("socket=PUSH") && has("socket=PULL"), "{lines:#?}");
}

fn count(out: &Captured, needle: &str) -> usize {
    out.lines().iter().filter(|l| l.contains(needle)).count()
}
