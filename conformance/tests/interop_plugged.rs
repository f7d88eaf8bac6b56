//! The whole suite on a fifth executor plugged in from outside (async-io + async-executor
//! through the futures-io adapter), proving a new runtime needs nothing but the traits.

mod interop {
    conformance::interop_suite!(conformance::plugged::AsyncIoBackend);
}
mod local {
    conformance::local_suite!(conformance::plugged::AsyncIoBackend);
}

/// The one-call entry point runs every scenario and reports them all passing.
#[test]
fn the_suite_in_one_call_reports_every_scenario() {
    let report = conformance::report::run_suite::<conformance::plugged::AsyncIoBackend>();
    // Every interop scenario over tcp and ipc with either side binding, and every pairing
    // over tcp, ipc, inproc, lz4+tcp and zstd+tcp.
    let n = conformance::scenarios::Scenario::ALL.len() * 4
        + conformance::local::Pairing::ALL.len() * 5;
    assert_eq!(report.outcomes.len(), n);
    assert_eq!(report.failed(), 0, "{report}");
    assert!(report
        .to_string()
        .contains(&format!("{n} passed, 0 failed")));
}

mod security {
    conformance::secure_suite!(conformance::plugged::AsyncIoBackend);
}

mod user_api {
    conformance::api_suite!(conformance::plugged::AsyncIoBackend);
}
