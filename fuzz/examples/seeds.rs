//! Writes the seed corpus: `cargo run --example seeds [DIR]` (default: `corpus` beside this
//! crate's Cargo.toml).

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    let n = omq_fuzz::seeds::write_all(&dir)?;
    println!("wrote {n} seeds under {}", dir.display());
    // Show how far each session seed gets, so a seed that stopped replaying is noticed.
    for side in omq_fuzz::setup::Side::ALL {
        let mut names: Vec<_> = std::fs::read_dir(dir.join(side.target()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for path in names {
            let out = omq_fuzz::session::run(side, &std::fs::read(&path)?);
            println!(
                "  {:<22} {:<40} handshake {:<5} {:?}",
                side.target(),
                path.file_name().unwrap_or_default().to_string_lossy(),
                out.succeeded,
                out.failed
            );
        }
    }
    Ok(())
}
