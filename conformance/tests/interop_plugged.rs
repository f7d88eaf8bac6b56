//! The whole suite on a fifth executor plugged in from outside (async-io + async-executor
//! through the futures-io adapter), proving a new runtime needs nothing but the traits.

mod interop {
    conformance::interop_suite!(conformance::plugged::AsyncIoBackend);
}
mod local {
    conformance::local_suite!(conformance::plugged::AsyncIoBackend);
}

/// The one-call entry point covers every scenario in every variant (counted from the lists,
/// not run: each runs as a test of its own above), runs a part of them through the report and
/// reports them passing, and a failure shows in the report with its message.
#[test]
fn the_suite_in_one_call_reports_every_scenario() {
    use conformance::local::Pairing;
    use conformance::report::{run_selected, variants, Outcome, Report};
    use conformance::scenarios::Scenario;

    // Every interop scenario over tcp and ipc with either side binding, and every pairing
    // over tcp, ipc, inproc, lz4+tcp and zstd+tcp, each named once.
    let all = variants(&Scenario::ALL, &Pairing::ALL);
    let n = Scenario::ALL.len() * 4 + Pairing::ALL.len() * 5;
    assert_eq!(all.len(), n);
    let distinct: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(distinct.len(), n, "a variant is named twice");

    let (scenarios, pairings) = (&Scenario::ALL[..2], &Pairing::ALL[..2]);
    let report = run_selected::<conformance::plugged::AsyncIoBackend>(scenarios, pairings);
    let names: Vec<_> = report.outcomes.iter().map(|o| o.name.clone()).collect();
    assert_eq!(names, variants(scenarios, pairings));
    assert_eq!(report.failed(), 0, "{report}");
    assert!(
        report.to_string().contains("18 passed, 0 failed"),
        "{report}"
    );

    let mut broken = Report {
        backend: "a broken one",
        outcomes: report.outcomes.clone(),
    };
    broken.outcomes.push(Outcome {
        name: "interop Something Tcp (omq binds)".into(),
        passed: false,
        detail: "assertion failed: nothing arrived".into(),
        took: std::time::Duration::ZERO,
    });
    let text = broken.to_string();
    assert_eq!(broken.failed(), 1);
    assert!(text.contains("18 passed, 1 failed"), "{text}");
    assert!(
        text.contains("FAIL  interop Something Tcp (omq binds)")
            && text.contains("nothing arrived"),
        "{text}"
    );
}

mod security {
    conformance::secure_suite!(conformance::plugged::AsyncIoBackend);
}

mod user_api {
    conformance::api_suite!(conformance::plugged::AsyncIoBackend);
}
