//! The traces tests' collector: `otlp_receiver.py` (in the virtualenv `scripts/test-tools.sh`
//! makes), which decodes every export with OpenTelemetry's protobuf definitions, run on a
//! loopback port; the spans it decodes, as JSON, and each export's headers and bytes.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use petstore_store::testing::{in_ci, loud_skip};
use serde_json::Value;

/// The test's collector: `otlp_receiver.py` on a loopback port, its spans as JSON.
pub(crate) struct Collector {
    child: Child,
    port: u16,
    /// The spans received.
    pub(crate) spans: Arc<Mutex<Vec<Value>>>,
    /// Each export's request headers.
    pub(crate) headers: Arc<Mutex<Vec<Value>>>,
    dump: tempfile::TempDir,
}

impl Collector {
    /// A collector that answers every export, or (`hang`) one that never answers; `None` (after
    /// a loud skip) without the virtualenv, outside CI.
    pub(crate) fn start(hang: bool) -> Option<Self> {
        let python =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/otlp/bin/python");
        if !python.is_file() {
            let what = "opentelemetry-proto is not installed (run scripts/test-tools.sh)";
            assert!(!in_ci(), "{what}");
            loud_skip(what);
            return None;
        }
        let dump = tempfile::tempdir().expect("dump folder");
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/blackbox/otlp_receiver.py");
        let mut command = Command::new(python);
        command.arg(script).arg(dump.path());
        if hang {
            command.arg("--hang");
        }
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the collector");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines
            .next()
            .expect("the collector's first line")
            .expect("read");
        let port = first
            .strip_prefix("listening on ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the collector said {first:?}"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let (kept, kept_headers) = (spans.clone(), headers.clone());
        thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let line: Value = serde_json::from_str(&line).expect("a line of JSON");
                match line.get("headers") {
                    Some(sent) => kept_headers.lock().expect("lock").push(sent.clone()),
                    None => kept.lock().expect("lock").push(line),
                }
            }
        });
        Some(Self {
            child,
            port,
            spans,
            headers,
            dump,
        })
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits (up to 20 s) until `done` holds for the spans received; returns them.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans.lock().expect("lock").clone();
            if done(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the collector did not get {what}; it got {spans:#?}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every export's body, as it came over the wire.
    pub(crate) fn exports(&self) -> Vec<Vec<u8>> {
        std::fs::read_dir(self.dump.path())
            .expect("dump folder")
            .map(|entry| std::fs::read(entry.expect("entry").path()).expect("export"))
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
