//! The container image and the systemd unit, as an operator uses them.
//!
//! The `Containerfile`'s runtime stage is built with podman around the binary this test build
//! made (given as the `builder` stage's output through `--build-context`), on a Debian bookworm
//! base made here with `debootstrap`: these machines reach no image registry. The image is run
//! with SQLite on a volume and against the local PostgreSQL. Where podman, runc or debootstrap
//! are missing (`scripts/test-tools.sh` installs them) the tests skip loudly, except under CI,
//! where they fail.
//!
//! Two things differ from a machine with a container engine as usual, both only here: podman
//! runs with `runc` (crun fails on these machines' cgroup mix) and `--network=host`, and the
//! image's health check runs on demand (`podman healthcheck run`) because podman schedules it
//! with systemd timers, and no systemd runs here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::{agent, get, post};
use petstore_store::testing::{TestDatabase, in_ci, loud_skip};

/// The Debian base the image is built on here, made once by debootstrap and kept between runs
/// (`podman rmi` it to make a new one).
const BASE_IMAGE: &str = "localhost/petstore-test-base:bookworm";

/// podman's storage is shared by the whole machine: one image build or container at a time.
static PODMAN: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Skips loudly outside CI, fails under CI.
fn unavailable(what: &str) {
    assert!(!in_ci(), "{what}: the container tests cannot run under CI");
    loud_skip(&format!("{what}; the container tests did not run"));
}

fn tool_missing(tools: &[&str]) -> Option<String> {
    tools
        .iter()
        .find(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_or(true, |status| !status.success())
        })
        .map(|tool| format!("`{tool}` cannot run (scripts/test-tools.sh installs it)"))
}

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(["--runtime", "runc"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run podman")
}

/// Runs podman and returns its stdout, panicking with its stderr on failure.
fn podman_ok(args: &[&str]) -> String {
    let output = podman(args);
    assert!(
        output.status.success(),
        "podman {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .subsec_nanos();
    format!("petstore-test-{what}-{}-{nanos}", std::process::id())
}

/// The Debian base: `debootstrap --variant=minbase bookworm` imported into podman, unless an
/// earlier run left it. `PETSTORE_TEST_DEBIAN_MIRROR` names another mirror.
fn ensure_base_image() {
    if podman(&["image", "exists", BASE_IMAGE]).status.success() {
        return;
    }
    let mirror = std::env::var("PETSTORE_TEST_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".into());
    let root = tempfile::tempdir().expect("tempdir");
    let rootfs = root.path().join("rootfs");
    let output = Command::new("debootstrap")
        .args(["--variant=minbase", "bookworm"])
        .arg(&rootfs)
        .arg(&mirror)
        .output()
        .expect("run debootstrap");
    assert!(
        output.status.success(),
        "debootstrap bookworm from {mirror} failed: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let import = format!(
        "tar -C '{}' -c . | podman import - {BASE_IMAGE}",
        rootfs.display()
    );
    let status = Command::new("bash")
        .args(["-o", "pipefail", "-c", &import])
        .stdout(Stdio::null())
        .status()
        .expect("import the base");
    assert!(
        status.success(),
        "podman import of the debootstrap base failed"
    );
}

/// An image built from the Containerfile's runtime stage; removed on drop.
struct Image {
    tag: String,
}

impl Image {
    fn build() -> Self {
        ensure_base_image();
        // The `builder` stage's output, `/out/petstore`, is this test build's binary.
        let stage = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        std::fs::create_dir(stage.path().join("out")).expect("mkdir out");
        let binary = stage.path().join("out/petstore");
        if std::fs::hard_link(crate::common::BIN, &binary).is_err() {
            std::fs::copy(crate::common::BIN, &binary).expect("copy the binary");
        }
        let tag = format!("localhost/{}", unique("image"));
        let builder = format!("builder={}", stage.path().display());
        let base = format!("RUNTIME_IMAGE={BASE_IMAGE}");
        let context = workspace();
        podman_ok(&[
            "build",
            "--isolation",
            "chroot",
            // HEALTHCHECK exists in the Docker image format only.
            "--format",
            "docker",
            "--target",
            "runtime",
            "--build-context",
            &builder,
            "--build-arg",
            &base,
            "--tag",
            &tag,
            "--file",
            &context.join("Containerfile").display().to_string(),
            &context.display().to_string(),
        ]);
        Self { tag }
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman(&["rmi", "--force", &self.tag]);
    }
}

/// A container of the image, listening on a free loopback port; removed (with its anonymous
/// volumes) on drop.
struct Container {
    name: String,
    port: u16,
}

impl Container {
    /// `podman run -d` with these extra `podman run` arguments (volumes, environment).
    fn run(image: &Image, extra: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let name = unique("container");
        let bind = format!("PETSTORE_BIND=127.0.0.1:{port}");
        let mut args = vec![
            "run",
            "--detach",
            "--name",
            &name,
            "--network=host",
            // podman asks for a higher open-files limit than root may set here.
            "--ulimit",
            "nofile=16384:16384",
            "--ulimit",
            "nproc=32768:32768",
            // No systemd timers here: the health check is run on demand below.
            "--health-interval",
            "disable",
            "--env",
            &bind,
            // Long enough to see /readyz at 503 while the rest is still served.
            "--env",
            "PETSTORE_SHUTDOWN_DELAY=2s",
            "--env",
            "PETSTORE_BOOTSTRAP_KEY=false",
        ];
        args.extend_from_slice(extra);
        args.push(&image.tag);
        podman_ok(&args);
        let container = Self { name, port };
        container.wait_until_ready();
        container
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn base(&self) -> String {
        format!("{}/v1", self.origin())
    }

    fn readyz(&self) -> Option<u16> {
        agent()
            .get(format!("{}/readyz", self.origin()))
            .call()
            .ok()
            .map(|response| response.status().as_u16())
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.readyz() != Some(200) {
            assert!(
                Instant::now() < deadline,
                "the container never answered /readyz 200; its log:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self) -> String {
        let output = podman(&["logs", &self.name]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    /// `podman exec CONTAINER petstore ARGS`: the admin commands as an operator runs them.
    fn petstore(&self, args: &[&str]) -> String {
        let mut exec = vec!["exec", self.name.as_str(), "petstore"];
        exec.extend_from_slice(args);
        podman_ok(&exec)
    }

    fn key(&self) -> String {
        self.petstore(&[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "100000",
            "--per-day",
            "1000000",
        ])
    }

    /// `podman stop`: /readyz turns 503 while the API still answers (the drain reached the server
    /// through tini), then the container exits 0 by itself, well before podman would kill it.
    fn stop_draining(&self, key: &str) {
        let stop = Command::new("podman")
            .args(["--runtime", "runc", "stop", "--time", "30", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("podman stop");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.readyz() != Some(503) {
            assert!(
                Instant::now() < deadline,
                "/readyz never answered 503 after podman stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let (status, body) = get(&self.base(), "/pets", key);
        assert_eq!(
            status, 200,
            "the API stops answering during the drain: {body}"
        );
        let output = stop.wait_with_output().expect("wait for podman stop");
        assert!(
            output.status.success(),
            "podman stop failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let code = podman_ok(&["inspect", "--format", "{{.State.ExitCode}}", &self.name]);
        assert_eq!(
            code,
            "0",
            "the server did not exit 0 on SIGTERM (137: podman killed it); its log:\n{}",
            self.logs()
        );
    }

    fn start(&self) {
        podman_ok(&["start", &self.name]);
        self.wait_until_ready();
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--volumes", &self.name]);
    }
}

/// A named podman volume; removed on drop.
struct Volume(String);

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = podman(&["volume", "rm", "--force", &self.0]);
    }
}

fn podman_available() -> bool {
    match tool_missing(&["podman", "runc", "debootstrap"]) {
        Some(reason) => {
            unavailable(&reason);
            false
        }
        None => true,
    }
}

fn names(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .expect("a page")
        .iter()
        .map(|pet| pet["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn the_image_serves_sqlite_from_its_volume_across_restarts() {
    if !podman_available() {
        return;
    }
    let _podman = PODMAN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let image = Image::build();
    let volume = Volume(unique("volume"));
    podman_ok(&["volume", "create", &volume.0]);
    let mount = format!("{}:/var/lib/petstore", volume.0);
    let container = Container::run(&image, &["--volume", &mount]);

    // Not root, tini as PID 1, and the health check through the binary passes.
    assert_eq!(podman_ok(&["exec", &container.name, "id", "-u"]), "10001");
    let pid1 = podman_ok(&["exec", &container.name, "cat", "/proc/1/comm"]);
    assert_eq!(pid1, "tini");
    podman_ok(&["healthcheck", "run", &container.name]);

    let key = container.key();
    let (status, pet) = post(&container.base(), &key, r#"{"name":"Kept","categoryId":1}"#);
    assert_eq!(status, 201, "{pet}");
    let (status, list) = get(&container.base(), "/pets", &key);
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["Kept"]);

    container.stop_draining(&key);
    container.start();
    let (status, list) = get(&container.base(), "/pets", &key);
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["Kept"], "the pet did not survive a restart");
    let (status, again) = get(&container.base(), &format!("/pets/{}", pet["id"]), &key);
    assert_eq!((status, &again), (200, &pet));
    // The database is the volume's, owned by the image's user.
    let owner = podman_ok(&[
        "exec",
        &container.name,
        "stat",
        "--format",
        "%u",
        "/var/lib/petstore/petstore.db",
    ]);
    assert_eq!(owner, "10001");
    container.stop_draining(&key);
}

#[test]
fn the_image_serves_postgresql() {
    if !podman_available() {
        return;
    }
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let _podman = PODMAN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let image = Image::build();
    let url = format!("PETSTORE_DATABASE_URL={}", db.url());
    let container = Container::run(&image, &["--env", &url]);

    let key = container.key();
    for name in ["One", "Two"] {
        let body = format!(r#"{{"name":"{name}","categoryId":1}}"#);
        let (status, pet) = post(&container.base(), &key, &body);
        assert_eq!(status, 201, "{pet}");
    }
    let (status, list) = get(&container.base(), "/pets", &key);
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["One", "Two"]);
    // The pets are in PostgreSQL: a second container on the same database lists them.
    container.stop_draining(&key);
    let second = Container::run(&image, &["--env", &url]);
    let (status, list) = get(&second.base(), "/pets", &key);
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["One", "Two"]);
    second.stop_draining(&key);
}

/// The unit in `deploy/` passes `systemd-analyze verify` (its `ExecStart=` pointed at this test
/// build's binary, as verify checks the program exists), warns about nothing, and keeps the
/// promises docs/deploy.md makes for it.
#[test]
fn the_systemd_unit_verifies() {
    if let Some(reason) = tool_missing(&["systemd-analyze"]) {
        unavailable(&reason);
        return;
    }
    let unit = std::fs::read_to_string(workspace().join("deploy/petstore.service"))
        .expect("deploy/petstore.service");
    let setting = |name: &str| {
        unit.lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("the unit sets no {name}="))
            .to_owned()
    };
    assert_eq!(setting("User"), "petstore");
    assert_eq!(setting("ExecStart"), "/usr/local/bin/petstore serve");
    assert_eq!(setting("NoNewPrivileges"), "yes");
    assert_eq!(setting("ProtectSystem"), "strict");
    assert!(setting("LimitNOFILE").parse::<u32>().expect("a number") >= 65536);
    // Above the default drain: PETSTORE_SHUTDOWN_DELAY (5s) + PETSTORE_SHUTDOWN_TIMEOUT (30s).
    let stop = humantime::parse_duration(&setting("TimeoutStopSec")).expect("a duration");
    assert!(stop > Duration::from_secs(35), "TimeoutStopSec {stop:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let checked = dir.path().join("petstore.service");
    std::fs::write(
        &checked,
        unit.replace("/usr/local/bin/petstore", crate::common::BIN),
    )
    .expect("write the unit");
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&checked)
        .output()
        .expect("run systemd-analyze");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "systemd-analyze verify: {stderr}");
    assert!(
        stderr.trim().is_empty(),
        "systemd-analyze verify warns: {stderr}"
    );
}
